//! DeepSeek-V3.2 (`<｜begin▁of▁sentence｜>{system}<｜User｜>…<｜Assistant｜></think>…<｜end▁of▁sentence｜>`,
//! DSML tool calls).
//!
//! - The prompt: DeepSeek ships no Jinja template but Python, `encoding/encoding_dsv32.py`, which
//!   vLLM (`tokenizers/deepseek_v32.py`) and SGLang (`entrypoints/openai/encoding_dsv32.py`) run.
//!   The built-in template `templates/deepseek-v3.2.jinja` is a rendition of it as vLLM runs it
//!   (the request's tools first, then the system prompt); each user or tool-result turn already
//!   opens the next assistant turn (`<｜Assistant｜></think>`, `<think>` when thinking), so the
//!   generation prompt adds nothing. History reasoning is read from `reasoning` (vLLM's key), else
//!   `reasoning_content` (SGLang's), and written only after the last user turn. SGLang orders
//!   the tools block after a system prompt: where the server could be SGLang, such a request is
//!   flagged (`FamilyRules::prompt_doubt`).
//! - Thinking: `thinking or enable_thinking` (vLLM's wrapper), default off; the model then writes
//!   `REASONING</think>CONTENT`.
//! - Tool calls (DSML): `\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n` then one
//!   `<｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>` per argument,
//!   `\n` between them, then `\n</｜DSML｜invoke>`; `\n` between calls, `\n</｜DSML｜function_calls>`
//!   last. A string VALUE is written as it is with `string="true"`, anything else as JSON with
//!   `string="false"`. Servers read each value back by that attribute and then by the request's
//!   schema (`server::deepseek_v32`): neither the attribute nor a typed value's spelling survives.
//!   No ids in the token stream.
//! - End of turn: `<｜end▁of▁sentence｜>`. Tokenizer: DeepSeek-V3's vocabulary, merges and
//!   pattern with seven more added tokens, among them `｜DSML｜`, `<think>` and `</think>`
//!   (`tests/assets/README.md`, `assets/deepseek-v3.2/`): with DeepSeek-V3's files each of those
//!   is several tokens and every count is off.
//! - DeepSeek-V3.2-Exp is not: it writes V3.1's tool syntax and ships V3.1's template, so its
//!   ids and its model directory (a template of its own) are DeepSeek-V3.1's family.

use serde_json::{Map, Value};

use super::deepseek_v3::END_OF_SENTENCE;
use super::deepseek_v31::{
    completion_text_with, has_sentence_markers, model_name, names_version, THINK_CLOSE,
};
use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, PromptStack, Syntax, ToolGrammar};
use crate::completion::Arguments;
use crate::json::python_truthy;
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};

pub const FUNCTION_CALLS_OPEN: &str = "<｜DSML｜function_calls>";
pub const FUNCTION_CALLS_CLOSE: &str = "</｜DSML｜function_calls>";
pub const INVOKE_OPEN: &str = "<｜DSML｜invoke name=\"";
pub const INVOKE_CLOSE: &str = "</｜DSML｜invoke>";
pub const PARAMETER_OPEN: &str = "<｜DSML｜parameter";
pub const PARAMETER_CLOSE: &str = "</｜DSML｜parameter>";
/// What the encoding writes between the content and the calls.
pub const BEFORE_CALLS: &str = "\n\n";

pub const SPEC: FamilySpec = FamilySpec {
    name: "deepseek-v3.2",
    // Before DeepSeek-V3.1 and V3, whose detection also matches V3.2's sentence markers.
    detect_order: 28,
    builtin_template: Some(include_str!("templates/deepseek-v3.2.jinja")),
    end_of_turn: Some(END_OF_SENTENCE),
    reasoning_close: Some(THINK_CLOSE),
    tool_section_begin: Some(FUNCTION_CALLS_OPEN),
    thinking_switch: Some(("thinking", false)),
    always_thinks: false,
    syntax: Some(Syntax::DeepseekV32),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_THINKING,
    tool_grammar: Some(ToolGrammar {
        section_begin: FUNCTION_CALLS_OPEN,
        first_call: "\n<｜DSML｜invoke name=\"",
        call_end: INVOKE_CLOSE,
        arguments_end: "\n",
        section_end: "\n</｜DSML｜function_calls>",
        next_call: &["\n", "\n<｜DSML｜invoke name=\""],
        markers: &[
            FUNCTION_CALLS_OPEN,
            FUNCTION_CALLS_CLOSE,
            INVOKE_OPEN,
            INVOKE_CLOSE,
            PARAMETER_OPEN,
            PARAMETER_CLOSE,
        ],
        openers: &[FUNCTION_CALLS_OPEN, INVOKE_OPEN],
    }),
    distinctive_markers: &[FUNCTION_CALLS_OPEN, INVOKE_OPEN, PARAMETER_OPEN],
};

impl Family {
    pub const DEEPSEEK_V32: Family = Family::new(&DeepseekV32);
}

pub const FAMILIES: &[Family] = &[Family::DEEPSEEK_V32];

/// DeepSeek-V3.2's rules: detection, the thinking switch, the native completion text and the
/// spellings of a call the servers read alike.
pub struct DeepseekV32;

impl FamilyRules for DeepseekV32 {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// A template that writes DSML calls, or `config.json`'s `model_type` (`deepseek_v32`)
    /// without a template (V3.2 ships none; V3.2-Exp, the same `model_type`, ships V3.1's).
    fn detect(&self, model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        (model_type == "deepseek_v32" && template.trim().is_empty())
            || (has_sentence_markers(tokenizer_config, template) && template.contains("｜DSML｜"))
    }

    /// `deepseek/deepseek-v3.2`, `deepseek-ai/DeepSeek-V3.2-Speciale`, `…:free`; not `…-exp`.
    fn detect_model_id(&self, model_id: &str) -> bool {
        let name = model_name(model_id);
        name.starts_with("deepseek") && names_version(&name, "3.2") && !name.contains("exp")
    }

    /// vLLM's wrapper: `thinking or enable_thinking`, each as Python tests truth.
    fn thinking(&self, kwargs: Option<&Map<String, Value>>) -> Option<bool> {
        let kwargs = kwargs?;
        let on = |key: &str| kwargs.get(key).is_some_and(python_truthy);
        Some(on("thinking") || on("enable_thinking"))
    }

    fn template_reads_argument_objects(&self) -> bool {
        true
    }

    /// SGLang hangs the request's tools on a first system prompt of the request's own (its text,
    /// then the tools block); vLLM puts them in a system message of their own before it: the same
    /// pieces in another order, which the count need not show. The built-in template renders as
    /// vLLM does, so under vLLM there is no doubt; under llama.cpp the template given is the
    /// render.
    fn prompt_doubt(
        &self,
        messages: &[Value],
        tools: Option<&[Value]>,
        stack: PromptStack,
    ) -> Option<&'static str> {
        if matches!(stack, PromptStack::Vllm | PromptStack::LlamaCpp) {
            return None;
        }
        let first = messages.first()?;
        let system = first.get("role").and_then(Value::as_str) == Some("system");
        let instructed = first
            .get("content")
            .is_some_and(|c| !matches!(c, Value::Null) && c.as_str() != Some(""));
        (system && instructed && tools.is_some_and(|t| !t.is_empty())).then_some(
            "DeepSeek-V3.2's tools block goes before the system prompt under vLLM and after it under SGLang (the same encoding, fed otherwise); rendered as vLLM does",
        )
    }

    fn completion_text(
        &self,
        thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(thinking, turn)))
    }

    fn call_spellings(&self, text: &str) -> Vec<String> {
        call_spellings(text)
    }
}

/// The text a DeepSeek-V3.2 model generated for one turn after the generation prompt (which
/// already holds `</think>`, or `<think>` when thinking): V3.1's turn (reasoning, content, end of
/// sentence) with the calls as the encoding writes them. The servers keep the whitespace before
/// the calls in the content unless that is all of it: an empty content stands for the encoding's
/// `\n\n`.
pub fn completion_text(thinking: bool, turn: &AssistantTurn) -> String {
    completion_text_with(thinking, turn, |out, turn| {
        if turn.content.trim().is_empty() && !turn.content.ends_with(BEFORE_CALLS) {
            out.push_str(BEFORE_CALLS);
        }
        out.push_str(FUNCTION_CALLS_OPEN);
        for call in &turn.tool_calls {
            out.push('\n');
            write_call(out, &call.name, &call.arguments);
        }
        out.push('\n');
        out.push_str(FUNCTION_CALLS_CLOSE);
    })
}

/// One call, as the encoding writes it. Arguments that are not a JSON object (a stream cut inside
/// the call sends the part it had) are written as they are after the call's header, left open:
/// never the model's text, which the forward check and the count then say.
fn write_call(out: &mut String, name: &str, arguments: &Arguments) {
    out.push_str(INVOKE_OPEN);
    out.push_str(name);
    out.push_str("\">\n");
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
    let written: Vec<String> = parameters
        .iter()
        .map(|(key, value)| parameter(key, value))
        .collect();
    out.push_str(&written.join("\n"));
    out.push('\n');
    out.push_str(INVOKE_CLOSE);
}

/// One `<｜DSML｜parameter …>VALUE</｜DSML｜parameter>`: a string as it is, anything else as JSON.
pub fn parameter(key: &str, value: &Value) -> String {
    let (is_string, text) = match value {
        Value::String(text) => ("true", text.clone()),
        other => ("false", dumps_json(other, &DumpOptions::default())),
    };
    format!("{PARAMETER_OPEN} name=\"{key}\" string=\"{is_string}\">{text}{PARAMETER_CLOSE}")
}

/// The texts a server may read alike with `text`: each `string="true"` value written with
/// `string="false"` instead, one value at a time (text that is not JSON reads back as that string,
/// and the schema may turn a JSON value back into it; the forward check drops the readings that
/// differ). `true` and `false` are one token each, so the count never decides between them: an
/// answer with a string value is left ambiguous, never guessed.
pub fn call_spellings(text: &str) -> Vec<String> {
    let marker = "\" string=\"true\">";
    text.match_indices(marker)
        .map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            format!("{}\" string=\"false\">{rest}", &text[..at])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        let ids = [
            "deepseek/deepseek-v3.2",
            "deepseek/deepseek-v3.2:free",
            "deepseek-ai/DeepSeek-V3.2",
            "deepseek-ai/DeepSeek-V3.2-Speciale",
        ];
        // V3.2-Exp writes V3.1's syntax (deepseek_v31.rs claims it).
        let others = [
            "deepseek-ai/DeepSeek-V3.1",
            "deepseek/deepseek-chat",
            "qwen/qwen3-8b",
            "deepseek-ai/DeepSeek-V3.2-Exp",
        ];
        crate::model::family::assert_model_ids(Family::DEEPSEEK_V32, &ids, &others);
    }

    #[test]
    fn detected_before_v31_and_v3() {
        let detect = |model_type: &str, template: &str| {
            Family::detect(
                Some(&serde_json::json!({ "model_type": model_type })),
                Some(&serde_json::json!({"added": "<｜begin▁of▁sentence｜>"})),
                Some(template),
            )
        };
        assert_eq!(detect("deepseek_v32", ""), Family::DEEPSEEK_V32);
        // V3.2-Exp's directory: V3.1's template.
        let v31 = Family::DEEPSEEK_V31.spec().builtin_template.unwrap();
        assert_eq!(detect("deepseek_v32", v31), Family::DEEPSEEK_V31);
        assert_eq!(
            detect("deepseek_v3", SPEC.builtin_template.unwrap()),
            Family::DEEPSEEK_V32
        );
        assert_eq!(detect("deepseek_v3", ""), Family::DEEPSEEK_V3);
    }

    #[test]
    fn tools_beside_a_system_prompt_are_a_doubt() {
        let tools = [serde_json::json!({"type": "function", "function": {"name": "f"}})];
        let system = serde_json::json!({"role": "system", "content": "Be brief."});
        let user = serde_json::json!({"role": "user", "content": "Hi"});
        let doubt = |messages: &[Value], tools: Option<&[Value]>| {
            DeepseekV32
                .prompt_doubt(messages, tools, PromptStack::Unknown)
                .is_some()
        };
        assert!(doubt(&[system.clone(), user.clone()], Some(&tools)));
        // Only where the stack could be SGLang: the built-in render is vLLM's.
        let messages = [system.clone(), user.clone()];
        for (stack, doubted) in [
            (PromptStack::Sglang, true),
            (PromptStack::Vllm, false),
            (PromptStack::LlamaCpp, false),
        ] {
            let doubt = DeepseekV32.prompt_doubt(&messages, Some(&tools), stack);
            assert_eq!(doubt.is_some(), doubted, "{stack:?}");
        }
        assert!(!doubt(&[system.clone(), user.clone()], None));
        assert!(!doubt(std::slice::from_ref(&user), Some(&tools)));
        let empty = serde_json::json!({"role": "system", "content": ""});
        assert!(!doubt(&[empty, user], Some(&tools)));
    }

    #[test]
    fn thinking_as_vllms_wrapper_reads_it() {
        let on =
            |kwargs: serde_json::Value| Family::DEEPSEEK_V32.thinking_enabled(kwargs.as_object());
        assert!(!Family::DEEPSEEK_V32.thinking_enabled(None));
        assert!(on(serde_json::json!({"thinking": true})));
        assert!(on(serde_json::json!({"enable_thinking": true})));
        assert!(on(
            serde_json::json!({"thinking": false, "enable_thinking": true})
        ));
        assert!(!on(serde_json::json!({"thinking": false})));
        assert!(!on(serde_json::json!({})));
    }

    #[test]
    fn completion_text_writes_dsml_calls() {
        let call = |name: &str, args: &str| ToolCall {
            id: None,
            name: name.into(),
            arguments: Arguments::Raw(args.into()),
        };
        let turn = AssistantTurn {
            reasoning: Some("Two.".into()),
            reasoning_closed: true,
            content: String::new(),
            tool_calls: vec![
                call("get_weather", r#"{"city": "Paris", "days": 3}"#),
                call("f", "{}"),
            ],
            end_of_turn: true,
        };
        assert_eq!(
            completion_text(true, &turn),
            "Two.</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n\
             <｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n\
             <｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n\
             </｜DSML｜invoke>\n<｜DSML｜invoke name=\"f\">\n\n</｜DSML｜invoke>\n\
             </｜DSML｜function_calls><｜end▁of▁sentence｜>"
        );
        let with_content = AssistantTurn {
            content: "Checking.\n\n".into(),
            tool_calls: vec![call("f", "{}")],
            ..AssistantTurn::default()
        };
        assert!(completion_text(false, &with_content)
            .starts_with("Checking.\n\n<｜DSML｜function_calls>\n"));
        let plain = AssistantTurn {
            content: "Hi".into(),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(completion_text(false, &plain), "Hi<｜end▁of▁sentence｜>");
    }

    #[test]
    fn call_spellings_flip_each_string_value() {
        let text = "<｜DSML｜parameter name=\"a\" string=\"true\">Paris</｜DSML｜parameter>\n\
                    <｜DSML｜parameter name=\"b\" string=\"true\">3</｜DSML｜parameter>\n\
                    <｜DSML｜parameter name=\"c\" string=\"false\">3</｜DSML｜parameter>";
        let spellings = call_spellings(text);
        assert_eq!(spellings.len(), 2);
        assert!(spellings[0].starts_with("<｜DSML｜parameter name=\"a\" string=\"false\">Paris"));
        assert!(spellings[1].contains("name=\"a\" string=\"true\">Paris"));
        assert!(spellings[1].contains("name=\"b\" string=\"false\">3"));
        assert!(call_spellings("Hello").is_empty());
    }
}
