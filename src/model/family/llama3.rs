//! Llama 3.1 and 3.3 Instruct (`<|begin_of_text|><|start_header_id|>ROLE<|end_header_id|>\n\n…<|eot_id|>`).
//!
//! - One tokenizer and one template for both: llama.cpp's `models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja`
//!   and `…-Llama-3.3-70B-Instruct.jinja` are the same file (`tests/assets/README.md`), the
//!   built-in template `templates/llama-3.1.jinja` (MIT, `tests/assets/templates/LICENSE-llama.cpp`).
//!   It renders the request's `tools` into the first user message (`tools_in_user_message`
//!   defaults to true), "Environment: ipython" into the system header whenever tools are given,
//!   and a date line ("Today Date: 26 Jul 2024" unless `date_string` is passed).
//! - Tool calls are JSON the model writes as its whole answer: `{"name": NAME, "parameters": ARGS}`
//!   (the template's spelling of a call in history, `tojson` arguments); vLLM's `llama3_json`
//!   parser (`server/llama3.rs`) reads more than one separated by `; `. No ids in the token stream:
//!   servers mint them.
//! - Built-in tools (`brave_search`, `wolfram_alpha`, `code_interpreter`) are written after
//!   `<|python_tag|>` as `NAME.call(…)` or code, and that turn ends with `<|eom_id|>` (the
//!   template's ipython mode, Meta's `llama_models/llama3/chat_format.py`); servers hand such an
//!   answer back as content, the special tag skipped by the detokenizer.
//! - End of turn: `<|eot_id|>` (every other turn, JSON tool calls included).

use super::{AssistantTurn, Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax};
use crate::completion::Arguments;
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};

pub const END_OF_TURN: &str = "<|eot_id|>";
/// Ends a turn that hands a built-in tool call to the executor.
pub const END_OF_MESSAGE: &str = "<|eom_id|>";
pub const PYTHON_TAG: &str = "<|python_tag|>";
pub const HEADER_START: &str = "<|start_header_id|>";
/// What vLLM's `llama3_json` parser reads between two calls (its streaming parser skips it).
pub const CALL_SEPARATOR: &str = "; ";
/// The tools Llama 3.1 calls with `<|python_tag|>NAME.call(`.
pub const CALLED_BUILTIN_TOOLS: &[&str] = &["brave_search", "wolfram_alpha"];

pub const SPEC: FamilySpec = FamilySpec {
    name: "llama3",
    detect_order: 40,
    builtin_template: Some(include_str!("templates/llama-3.1.jinja")),
    end_of_turn: Some(END_OF_TURN),
    reasoning_close: None,
    tool_section_begin: None,
    thinking_switch: None,
    always_thinks: false,
    syntax: Some(Syntax::Llama3Json),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_0905,
    // A cut inside a call leaves it in `content` whole (`llama3_json` gives up on JSON that does
    // not load): nothing for the cut tails to enumerate.
    tool_grammar: None,
    distinctive_markers: &[HEADER_START, END_OF_TURN, PYTHON_TAG, END_OF_MESSAGE],
};

impl Family {
    pub const LLAMA3: Family = Family::new(&Llama3);
}

pub const FAMILIES: &[Family] = &[Family::LLAMA3];

/// Llama 3.1 / 3.3's rules: detection and the native completion text.
pub struct Llama3;

impl FamilyRules for Llama3 {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// Llama 3's header markers, with 3.1's tool vocabulary: `<|python_tag|>` in the tokenizer
    /// or the ipython environment in the template (Llama 3's own template has neither).
    fn detect(&self, _model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        let has = |needle: &str| tokenizer_config.contains(needle) || template.contains(needle);
        has(HEADER_START)
            && has(END_OF_TURN)
            && (tokenizer_config.contains(PYTHON_TAG) || template.contains("Environment: ipython"))
    }

    /// `meta-llama/llama-3.1-70b-instruct`, `meta-llama/llama-3.3-70b-instruct:free`,
    /// `meta-llama/Llama-3.1-8B-Instruct`, `meta-llama/Meta-Llama-3.1-405B-Instruct`; not the
    /// fine-tunes with templates of their own (Nemotron, Hermes) nor Llama Guard.
    fn detect_model_id(&self, model_id: &str) -> bool {
        let id = model_id.to_ascii_lowercase();
        let name = id.rsplit('/').next().unwrap_or_default();
        let name = name.strip_prefix("meta-").unwrap_or(name);
        let version = ["llama-3.1-", "llama-3.3-"]
            .iter()
            .any(|v| name.starts_with(v));
        version
            && !["nemotron", "hermes", "guard"]
                .iter()
                .any(|o| id.contains(o))
    }

    fn other_end_of_turn(&self) -> Option<&'static str> {
        Some(END_OF_MESSAGE)
    }

    /// A turn with JSON calls as vLLM's `llama3_json` reads it alike: after `<|python_tag|>` or
    /// not (the detokenizer skips it), the arguments under `"arguments"` or `"parameters"`, ended
    /// by `<|eom_id|>` (the template's ipython mode) or `<|eot_id|>` (no stop token is shown).
    fn call_spellings(&self, text: &str) -> Vec<String> {
        call_spellings(text)
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(turn)))
    }
}

/// The text a Llama 3.1 model generated for one turn after the generation prompt: the tool
/// calls as the template writes them in history (joined as `llama3_json` reads them), else the
/// content — after `<|python_tag|>` and ended by `<|eom_id|>` when it calls a built-in tool —,
/// then the end of turn. Servers return no content beside calls: a turn with calls is only them.
pub fn completion_text(turn: &AssistantTurn) -> String {
    let mut out = String::new();
    let mut end = END_OF_TURN;
    if turn.tool_calls.is_empty() {
        if calls_builtin_tool(&turn.content) {
            out.push_str(PYTHON_TAG);
            end = END_OF_MESSAGE;
        }
        out.push_str(&turn.content);
    } else {
        for (i, call) in turn.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push_str(CALL_SEPARATOR);
            }
            out.push_str("{\"name\": ");
            out.push_str(&dumps_json(
                &serde_json::Value::String(call.name.clone()),
                &DumpOptions::default(),
            ));
            out.push_str(", \"parameters\": ");
            match &call.arguments {
                Arguments::Raw(text) => out.push_str(text),
                Arguments::Object(value) => {
                    out.push_str(&dumps_json(value, &DumpOptions::default()))
                }
            }
            out.push('}');
        }
    }
    if turn.end_of_turn {
        out.push_str(end);
    }
    out
}

/// The key `llama3_json` also reads a call's arguments under.
const ARGUMENTS_KEY: &str = "\", \"arguments\": ";
const PARAMETERS_KEY: &str = "\", \"parameters\": ";

/// See [`Llama3::call_spellings`]: every combination of the tag, the key and (for a finished
/// turn) the end token but `text`'s own, for a turn of JSON calls as [`completion_text`] writes
/// it.
pub fn call_spellings(text: &str) -> Vec<String> {
    let (body, ends): (&str, &[&str]) = match text.strip_suffix(END_OF_TURN) {
        Some(body) => (body, &[END_OF_TURN, END_OF_MESSAGE]),
        None => (text, &[""]),
    };
    if !body.starts_with("{\"name\": ") || !body.contains(PARAMETERS_KEY) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for tag in ["", PYTHON_TAG] {
        for key in [PARAMETERS_KEY, ARGUMENTS_KEY] {
            for end in ends {
                out.push(format!("{tag}{}{end}", body.replace(PARAMETERS_KEY, key)));
            }
        }
    }
    out.retain(|alt| alt != text);
    out
}

/// Whether `content` is a built-in tool call as Llama 3.1 writes it after `<|python_tag|>`
/// (`brave_search.call(query="…")`), which a server returns as content with the tag skipped.
pub fn calls_builtin_tool(content: &str) -> bool {
    CALLED_BUILTIN_TOOLS.iter().any(|tool| {
        content
            .strip_prefix(tool)
            .is_some_and(|rest| rest.starts_with(".call(") && rest.ends_with(')'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;

    #[test]
    fn call_spellings_are_the_tag_key_and_end_llama3_json_hides() {
        let call = r#"{"name": "f", "parameters": {}}"#;
        let finished = call_spellings(&format!("{call}<|eot_id|>"));
        assert_eq!(finished.len(), 7);
        assert!(finished
            .contains(&r#"<|python_tag|>{"name": "f", "arguments": {}}<|eom_id|>"#.to_string()));
        // Cut: no end token to swap.
        assert_eq!(call_spellings(call).len(), 3);
        assert!(call_spellings("Hello<|eot_id|>").is_empty());
    }

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        for id in [
            "meta-llama/llama-3.1-70b-instruct",
            "meta-llama/llama-3.1-8b-instruct",
            "meta-llama/llama-3.3-70b-instruct:free",
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct",
            "meta-llama/Meta-Llama-3.1-405B-Instruct",
        ] {
            assert_eq!(Family::from_model_id(id), Some(Family::LLAMA3), "{id}");
        }
        for id in [
            "meta-llama/llama-3.2-3b-instruct",
            "meta-llama/Meta-Llama-3-8B-Instruct",
            "nvidia/llama-3.1-nemotron-70b-instruct",
            "nousresearch/hermes-3-llama-3.1-405b",
            "meta-llama/llama-guard-3-8b",
        ] {
            assert_ne!(Family::from_model_id(id), Some(Family::LLAMA3), "{id}");
        }
    }

    #[test]
    fn detected_by_its_tool_vocabulary() {
        let rules = Family::LLAMA3.rules();
        let tokens = "<|start_header_id|> <|eot_id|> <|python_tag|>";
        assert!(rules.detect("llama", tokens, ""));
        assert!(rules.detect("llama", "", SPEC.builtin_template.unwrap_or_default()));
        // Llama 3's tokenizer and template: neither.
        assert!(!rules.detect("llama", "<|start_header_id|> <|eot_id|>", ""));
        assert!(!rules.detect("llama", "", "{{ messages }}"));
    }

    #[test]
    fn completion_text_writes_calls_as_the_template_does() {
        let call = |name: &str, args: &str| ToolCall {
            id: None,
            name: name.into(),
            arguments: Arguments::Raw(args.into()),
        };
        let turn = AssistantTurn {
            tool_calls: vec![call("get_weather", r#"{"city": "Paris"}"#)],
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&turn),
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
        );
        let two = AssistantTurn {
            tool_calls: vec![call("f", "{}"), call("g", r#"{"a": 1}"#)],
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&two),
            "{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"a\": 1}}<|eot_id|>"
        );
        let builtin = AssistantTurn {
            content: "brave_search.call(query=\"weather in Paris\")".into(),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(
            completion_text(&builtin),
            "<|python_tag|>brave_search.call(query=\"weather in Paris\")<|eom_id|>"
        );
        let plain = AssistantTurn {
            content: "Hi".into(),
            ..AssistantTurn::default()
        };
        assert_eq!(completion_text(&plain), "Hi");
    }
}
