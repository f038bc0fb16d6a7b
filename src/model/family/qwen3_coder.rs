//! Qwen3-Coder (ChatML `<|im_start|>role\n…<|im_end|>\n`, XML-style tool calls, never thinks).
//!
//! - Tool calls: `<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…</function>\n</tool_call>`,
//!   one section per call, `\n` between calls; no ids in the token stream. A string VALUE is
//!   written as it is; the template writes an object or array with `tojson` and any other value
//!   with `string`. Servers read every VALUE back as a string and convert it by the request's
//!   schema (`server::qwen3_coder`), so a typed value's own spelling (`5.0`, ` 5`) is lost.
//! - Content before calls: the template writes `content | trim`, then `\n`, then `\n<tool_call>`.
//! - End of turn: `<|im_end|>`. Tokenizer: Qwen3's (`tests/assets/README.md`); `<tool_call>` and
//!   `</tool_call>` are its added tokens, `<function=` and `<parameter=` plain text.
//! - Built-in template: `templates/qwen3-coder.jinja`, llama.cpp's `models/templates/Qwen3-Coder.jinja`
//!   (MIT, `tests/assets/templates/LICENSE-llama.cpp`), which reads tool-call arguments as
//!   objects (`arguments | items`): servers parse a request's JSON-string arguments first
//!   ([`FamilyRules::template_reads_argument_objects`]).

use serde_json::Value;

use super::qwen3::{CALL_CLOSE, CALL_OPEN, END_OF_TURN};
use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax, ToolGrammar};
use crate::completion::Arguments;
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};

pub const FUNCTION_OPEN: &str = "<function=";
pub const FUNCTION_CLOSE: &str = "</function>";
pub const PARAMETER_OPEN: &str = "<parameter=";
pub const PARAMETER_CLOSE: &str = "</parameter>";

pub const SPEC: FamilySpec = FamilySpec {
    name: "qwen3-coder",
    // Before Qwen3, whose detection (ChatML and `<think>` in the tokenizer) also matches.
    detect_order: 19,
    builtin_template: Some(include_str!("templates/qwen3-coder.jinja")),
    end_of_turn: Some(END_OF_TURN),
    reasoning_close: None,
    tool_section_begin: Some(CALL_OPEN),
    thinking_switch: None,
    always_thinks: false,
    syntax: Some(Syntax::Qwen3Coder),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_0905,
    tool_grammar: Some(ToolGrammar {
        section_begin: CALL_OPEN,
        first_call: "",
        call_end: CALL_CLOSE,
        arguments_end: "</function>\n",
        section_end: "",
        // A newline, then the next call's open.
        next_call: &["\n", "\n<tool_call>"],
        markers: &[
            CALL_OPEN,
            CALL_CLOSE,
            FUNCTION_OPEN,
            FUNCTION_CLOSE,
            PARAMETER_OPEN,
            PARAMETER_CLOSE,
        ],
        openers: &[CALL_OPEN, FUNCTION_OPEN],
    }),
    distinctive_markers: &[FUNCTION_OPEN, PARAMETER_OPEN, "<|im_start|>"],
};

impl Family {
    pub const QWEN3_CODER: Family = Family::new(&Qwen3Coder);
}

pub const FAMILIES: &[Family] = &[Family::QWEN3_CODER];

/// Qwen3-Coder's rules: detection and the native completion text.
pub struct Qwen3Coder;

impl FamilyRules for Qwen3Coder {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// A ChatML template that writes `<function=` calls.
    fn detect(&self, _model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        let has = |needle: &str| tokenizer_config.contains(needle) || template.contains(needle);
        has("<|im_start|>") && has("<function=") && has("<parameter=")
    }

    /// `qwen/qwen3-coder`, `qwen/qwen3-coder-30b-a3b-instruct`, `Qwen/Qwen3-Coder-480B-A35B-Instruct`,
    /// `…:free`, `…-FP8`.
    fn detect_model_id(&self, model_id: &str) -> bool {
        let id = model_id.to_ascii_lowercase();
        let name = id.rsplit('/').next().unwrap_or_default();
        name.starts_with("qwen3-coder")
    }

    fn template_reads_argument_objects(&self) -> bool {
        true
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(turn)))
    }
}

/// The text a Qwen3-Coder model generated for one turn after the generation prompt
/// (`<|im_start|>assistant\n`), laid out as the template writes an assistant message with
/// tool calls: the content trimmed and `\n\n` before the first call (none without content),
/// `\n` between calls. Arguments that are not a JSON object (a stream cut inside the call sends
/// the part it had) are written as they are after the call's header, left open: never the
/// model's text, which the forward check and the count then say.
pub fn completion_text(turn: &AssistantTurn) -> String {
    let mut out = String::new();
    if turn.tool_calls.is_empty() {
        out.push_str(&turn.content);
    } else {
        let content = turn.content.trim();
        if !content.is_empty() {
            out.push_str(content);
            out.push_str("\n\n");
        }
        for (i, call) in turn.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            write_call(&mut out, &call.name, &call.arguments);
        }
    }
    if turn.end_of_turn {
        out.push_str(END_OF_TURN);
    }
    out
}

/// One call, as the template writes it.
fn write_call(out: &mut String, name: &str, arguments: &Arguments) {
    out.push_str(CALL_OPEN);
    out.push('\n');
    out.push_str(FUNCTION_OPEN);
    out.push_str(name);
    out.push_str(">\n");
    let parsed;
    let parameters = match arguments {
        Arguments::Object(Value::Object(parameters)) => parameters,
        Arguments::Raw(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(parameters)) => {
                parsed = parameters;
                &parsed
            }
            _ => return out.push_str(text),
        },
        Arguments::Object(other) => {
            return out.push_str(&dumps_json(other, &DumpOptions::default()))
        }
    };
    for (key, value) in parameters {
        out.push_str(PARAMETER_OPEN);
        out.push_str(key);
        out.push_str(">\n");
        out.push_str(&value_text(value));
        out.push('\n');
        out.push_str(PARAMETER_CLOSE);
        out.push('\n');
    }
    out.push_str(FUNCTION_CLOSE);
    out.push('\n');
    out.push_str(CALL_CLOSE);
}

/// A parameter's value as the model writes it: a string as it is, anything else as JSON (the
/// spelling a schema conversion reads back to the same value; the template's `string` of a
/// Python bool, `True`, is not what the servers' parsers accept).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => dumps_json(other, &DumpOptions::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        for id in [
            "qwen/qwen3-coder",
            "qwen/qwen3-coder:free",
            "qwen/qwen3-coder-30b-a3b-instruct",
            "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        ] {
            assert_eq!(Family::from_model_id(id), Some(Family::QWEN3_CODER), "{id}");
        }
        for id in ["qwen/qwen3-8b", "Qwen/Qwen2.5-Coder-32B-Instruct"] {
            assert_ne!(Family::from_model_id(id), Some(Family::QWEN3_CODER), "{id}");
        }
    }

    #[test]
    fn detected_from_its_template_before_qwen3() {
        let detect = |template: &str| {
            Family::detect(
                Some(&serde_json::json!({"model_type": "qwen3_moe"})),
                Some(&serde_json::json!({"added": "<|im_start|><think>"})),
                Some(template),
            )
        };
        assert_eq!(detect(SPEC.builtin_template.unwrap()), Family::QWEN3_CODER);
        assert_eq!(detect("<|im_start|>"), Family::QWEN3);
    }

    #[test]
    fn completion_text_writes_the_xml_calls() {
        let call = |name: &str, args: &str| ToolCall {
            id: None,
            name: name.into(),
            arguments: Arguments::Raw(args.into()),
        };
        let turn = AssistantTurn {
            content: " Checking. ".into(),
            tool_calls: vec![
                call("get_weather", r#"{"city": "Paris", "days": 3}"#),
                call("f", "{}"),
            ],
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&turn),
            "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n\
             <parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=f>\n\
             </function>\n</tool_call><|im_end|>"
        );
        let bare = AssistantTurn {
            tool_calls: vec![call("f", r#"{"o": {"a": [1, "x"]}}"#)],
            end_of_turn: false,
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&bare),
            "<tool_call>\n<function=f>\n<parameter=o>\n{\"a\": [1, \"x\"]}\n</parameter>\n</function>\n</tool_call>"
        );
        // A stream cut inside the call: its partial arguments, after the header.
        let cut = AssistantTurn {
            tool_calls: vec![call("f", r#"{"q": "l"#)],
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&cut),
            "<tool_call>\n<function=f>\n{\"q\": \"l"
        );
    }
}
