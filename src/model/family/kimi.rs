//! Kimi K2, K2-Thinking and K2.5 (`<|im_user|>`/`<|im_assistant|>`/`<|im_system|>` … `<|im_end|>`).
//!
//! Shared by all three:
//! - Roles: `<|im_{user,assistant,system}|>{name or role}<|im_middle|>…<|im_end|>`, no newlines
//!   between messages; `tool` and other roles use `<|im_system|>`. Tool results render as
//!   `## Return of {tool_call_id}\n{content}`.
//! - Tools are declared first, as `<|im_system|>tool_declare<|im_middle|>…<|im_end|>`. The Kimi
//!   tokenizer's own `apply_chat_template` deep-sorts every dict key of `tools` first.
//! - Tool calls: `<|tool_calls_section_begin|>` then per call
//!   `<|tool_call_begin|>{id}<|tool_call_argument_begin|>{args}<|tool_call_end|>`, then
//!   `<|tool_calls_section_end|>`; ids are `functions.NAME:N` with N counted over the whole
//!   conversation; string arguments verbatim, objects through the template's `tojson`.
//! - End of turn: `<|im_end|>` (not the tokenizer's `eos_token` `[EOS]`).
//!
//! Per model:
//! - **K2** (Instruct): no `<think>` anywhere; tools as compact sorted JSON; default system
//!   "You are Kimi, an AI assistant created by Moonshot AI." followed by a literal `\n` when the
//!   conversation has no system message (the HF template's whitespace; PrimeIntellect's K2
//!   renderer documents it). The July-2025 revision used "You are a helpful assistant".
//! - **K2-Thinking**: history assistants (up to the last assistant without tool calls) render
//!   `<think></think>`, later ones `<think>{reasoning_content}</think>`; the generation prompt
//!   ends at `<|im_middle|>` and the model writes `<think>` itself; same default system (no `\n`).
//! - **K2.5**: like K2-Thinking but `<think>` is in the generation prompt (`<think></think>` when
//!   `thinking=false`), tools are the TypeScript declaration `tools_ts_str` (see
//!   `kimi/tools_ts.rs`), defaults `thinking=true`, `preserve_thinking=false`, and no default
//!   system message (the K2.5-derived template injects none; some third-party renderers do).

use serde_json::{Map, Value};

use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax, ToolGrammar};
use crate::completion::Arguments;
use crate::model::ModelError;
use crate::pyjson::{self, DumpOptions};

// The registry loads this file by its path, so its submodules are named by path.
#[path = "kimi/render.rs"]
pub mod render;
#[path = "kimi/tools_ts.rs"]
pub mod tools_ts;

pub const K2: FamilySpec = FamilySpec {
    name: "kimi-k2",
    detect_order: DETECT_ORDER,
    builtin_template: Some(include_str!("templates/kimi-k2.jinja")),
    end_of_turn: Some(END_OF_TURN),
    reasoning_close: None,
    tool_section_begin: Some(SECTION_BEGIN),
    thinking_switch: None,
    always_thinks: false,
    syntax: Some(Syntax::Kimi),
    detokenizer_spaces: true,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: render::K2_TWINS,
    k2vv: K2vvThreshold {
        tool_call_f1_min: 0.80,
        basis: "K2-0905 at temperature 0.6 (official minimum 82.71%)",
    },
    tool_grammar: Some(TOOL_GRAMMAR),
    distinctive_markers: DISTINCTIVE_MARKERS,
};

/// K2 with reasoning, which it always writes.
pub const K2_THINKING: FamilySpec = FamilySpec {
    name: "kimi-k2-thinking",
    builtin_template: Some(include_str!("templates/kimi-k2-thinking.jinja")),
    reasoning_close: Some(THINK_END),
    always_thinks: true,
    native_twins: render::K2_THINKING_TWINS,
    k2vv: K2vvThreshold {
        tool_call_f1_min: 0.73,
        basis: "K2-Thinking at temperature 1.0 (official minimum 75.81%)",
    },
    ..K2
};

/// K2-Thinking with thinking switched by `thinking` (on by default).
pub const K25: FamilySpec = FamilySpec {
    name: "kimi-k2.5",
    builtin_template: Some(include_str!("templates/kimi-k2.5.jinja")),
    thinking_switch: Some(("thinking", true)),
    always_thinks: false,
    native_twins: render::K25_TWINS,
    k2vv: K2vvThreshold {
        tool_call_f1_min: 0.73,
        basis: "K2-Thinking's (none published for K2.5)",
    },
    ..K2_THINKING
};

/// Before Qwen3: Kimi's tokenizer also has ChatML's `<|im_start|>`.
const DETECT_ORDER: u8 = 10;

impl Family {
    pub const KIMI_K2: Family = Family::new(&KimiRules {
        model: Model::K2,
        spec: &K2,
    });
    pub const KIMI_K2_THINKING: Family = Family::new(&KimiRules {
        model: Model::K2Thinking,
        spec: &K2_THINKING,
    });
    pub const KIMI_K25: Family = Family::new(&KimiRules {
        model: Model::K25,
        spec: &K25,
    });
}

pub const FAMILIES: &[Family] = &[Family::KIMI_K2, Family::KIMI_K2_THINKING, Family::KIMI_K25];

/// Which Kimi model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Model {
    K2,
    K2Thinking,
    K25,
}

/// The rules of one Kimi model: the three share their functions and differ in their spec.
struct KimiRules {
    model: Model,
    spec: &'static FamilySpec,
}

impl KimiRules {
    fn family(&self) -> Family {
        match self.model {
            Model::K2 => Family::KIMI_K2,
            Model::K2Thinking => Family::KIMI_K2_THINKING,
            Model::K25 => Family::KIMI_K25,
        }
    }
}

impl FamilyRules for KimiRules {
    fn spec(&self) -> &'static FamilySpec {
        self.spec
    }

    fn detect(&self, model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        detect(model_type, tokenizer_config, template) == Some(self.family())
    }

    fn prepare_context(&self, tools: Option<&[Value]>, context: &mut Map<String, Value>) {
        prepare(self.family(), tools, context);
    }

    fn completion_text(
        &self,
        thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(completion_text(self.family(), thinking, turn))
    }

    fn native_tool_call_id(&self, name: &str, n: usize) -> Option<String> {
        Some(native_tool_call_id(name, n))
    }

    fn is_native_tool_call_id(&self, id: &str) -> bool {
        is_native_tool_call_id(id)
    }
}

// Kimi's markers, defined here only: the server parsers (`server::kimi`), the reconstruction,
// the audit and the simulator read them from this file.
pub const END_OF_TURN: &str = "<|im_end|>";
pub const THINK_BEGIN: &str = "<think>";
pub const THINK_END: &str = "</think>";
pub const SECTION_BEGIN: &str = "<|tool_calls_section_begin|>";
pub const SECTION_END: &str = "<|tool_calls_section_end|>";
pub const CALL_BEGIN: &str = "<|tool_call_begin|>";
pub const ARGUMENT_BEGIN: &str = "<|tool_call_argument_begin|>";
pub const CALL_END: &str = "<|tool_call_end|>";
/// Where a `length` cut can fall in Kimi's tool section: the opener is always followed by a
/// call's begin, arguments run to the call's end.
const TOOL_GRAMMAR: ToolGrammar = ToolGrammar {
    section_begin: SECTION_BEGIN,
    first_call: CALL_BEGIN,
    call_end: CALL_END,
    arguments_end: "",
    section_end: SECTION_END,
    next_call: &[CALL_BEGIN],
    markers: &[
        SECTION_BEGIN,
        SECTION_BEGIN_SINGULAR,
        CALL_BEGIN,
        ARGUMENT_BEGIN,
        CALL_END,
        SECTION_END,
    ],
    openers: &[SECTION_BEGIN, SECTION_BEGIN_SINGULAR, CALL_BEGIN],
};
const DISTINCTIVE_MARKERS: &[&str] = &[SECTION_BEGIN, CALL_BEGIN, ARGUMENT_BEGIN, "<|im_middle|>"];
/// The singular misspellings of the section markers that vLLM's `kimi_k2` parsers accept.
pub const SECTION_BEGIN_SINGULAR: &str = "<|tool_call_section_begin|>";
pub const SECTION_END_SINGULAR: &str = "<|tool_call_section_end|>";

/// Kimi from `config.json`'s `model_type` or Kimi's special tokens; which Kimi from the template.
pub fn detect(model_type: &str, tokenizer_config: &str, template: &str) -> Option<Family> {
    let is_kimi = model_type.starts_with("kimi") || tokenizer_config.contains("<|im_middle|>");
    if !is_kimi {
        return None;
    }
    Some(
        if model_type == "kimi_k25" || template.contains("tools_ts_str") {
            Family::KIMI_K25
        } else if template.contains(THINK_BEGIN) {
            Family::KIMI_K2_THINKING
        } else {
            Family::KIMI_K2
        },
    )
}

/// What the Kimi tokenizer's `apply_chat_template` adds before the template runs: tools with
/// every dict key sorted, and for K2.5 `thinking=true`, `preserve_thinking=false` and
/// `tools_ts_str` (left unset when the TypeScript encoder fails, as upstream does).
pub fn prepare(family: Family, tools: Option<&[Value]>, context: &mut Map<String, Value>) {
    let tools = tools.map(|tools| tools.iter().map(deep_sort).collect::<Vec<_>>());
    if family == Family::KIMI_K25 {
        context.insert("thinking".into(), Value::Bool(true));
        context.insert("preserve_thinking".into(), Value::Bool(false));
        if let Some(tools) = tools.as_deref().filter(|t| !t.is_empty()) {
            if let Ok(ts) = tools_ts::encode_tools(tools) {
                context.insert("tools_ts_str".into(), Value::String(ts));
            }
        }
    }
    context.insert("tools".into(), tools.map_or(Value::Null, Value::Array));
}

/// `deep_sort_dict`: every object's keys sorted, recursively (lists keep their order).
pub fn deep_sort(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), deep_sort(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(deep_sort).collect()),
        other => other.clone(),
    }
}

/// `functions.NAME:N`.
pub fn native_tool_call_id(name: &str, n: usize) -> String {
    format!("functions.{name}:{n}")
}

/// `NAME:digits` with no `<` in NAME: what vLLM's kimi_k2 parser captures as an id.
pub fn is_native_tool_call_id(id: &str) -> bool {
    match id.rsplit_once(':') {
        Some((name, index)) => {
            !name.is_empty()
                && !name.contains('<')
                && !index.is_empty()
                && index.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// The text a Kimi model generated for one turn after the generation prompt.
pub fn completion_text(
    family: Family,
    thinking: bool,
    turn: &AssistantTurn,
) -> Result<String, ModelError> {
    let reasoning = turn.reasoning.as_deref();
    let mut out = String::new();
    if family == Family::KIMI_K25 && thinking {
        // K2.5 with thinking: `<think>` is the last prompt token, the model starts with reasoning.
        out.push_str(reasoning.unwrap_or_default());
        if turn.reasoning_closed {
            out.push_str(THINK_END);
        }
    } else if let (true, Some(reasoning)) = (family == Family::KIMI_K2_THINKING, reasoning) {
        // K2-Thinking writes its own `<think>`.
        out.push_str(THINK_BEGIN);
        out.push_str(reasoning);
        if turn.reasoning_closed {
            out.push_str(THINK_END);
        }
    }
    // K2, K2.5 with thinking off (the prompt ends `<think></think>`), no reasoning: nothing.
    out.push_str(&turn.content);
    if !turn.tool_calls.is_empty() {
        out.push_str(SECTION_BEGIN);
        for call in &turn.tool_calls {
            let id = call.id.as_deref().ok_or_else(|| {
                ModelError::Other(format!(
                    "tool call {:?} has no id; Kimi needs its native id (functions.{}:N)",
                    call.name, call.name
                ))
            })?;
            out.push_str(CALL_BEGIN);
            out.push_str(id);
            out.push_str(ARGUMENT_BEGIN);
            match &call.arguments {
                Arguments::Raw(text) => out.push_str(text),
                // What the template's `| tojson` writes: Python json.dumps defaults.
                Arguments::Object(value) => {
                    out.push_str(&pyjson::dumps_json(value, &DumpOptions::default()))
                }
            }
            out.push_str(CALL_END);
        }
        out.push_str(SECTION_END);
    }
    if turn.end_of_turn {
        out.push_str(END_OF_TURN);
    }
    Ok(out)
}

/// Where the reasoning ends: the earliest `</think>` (skipped: its length),
/// `<|tool_calls_section_begin|>` or `<|tool_call_begin|>` (kept: 0). All three start with `<`,
/// so one `memchr` pass over the `<`s finds the earliest (three `str::find`s over a long answer
/// were a tenth of a build's CPU: the server parsers send every candidate forward).
pub fn reasoning_end(text: &str) -> Option<(usize, usize)> {
    const ENDS: [(&str, usize); 3] = [
        (THINK_END, THINK_END.len()),
        (SECTION_BEGIN, 0),
        (CALL_BEGIN, 0),
    ];
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'<', bytes).find_map(|at| {
        ENDS.iter()
            .find(|(marker, _)| bytes[at..].starts_with(marker.as_bytes()))
            .map(|&(_, skip)| (at, skip))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;
    use serde_json::json;

    #[test]
    fn deep_sort_sorts_every_nested_key() {
        // python: deep_sort_dict({"b": {"z": 1, "a": [{"y": 1, "x": 2}]}, "a": 0}) (tokenization_kimi.py)
        let sorted = deep_sort(&json!({"b": {"z": 1, "a": [{"y": 1, "x": 2}]}, "a": 0}));
        assert_eq!(
            serde_json::to_string(&sorted).unwrap(),
            r#"{"a":0,"b":{"a":[{"x":2,"y":1}],"z":1}}"#
        );
    }

    #[test]
    fn native_ids() {
        assert_eq!(
            native_tool_call_id("get_weather", 3),
            "functions.get_weather:3"
        );
        for id in ["functions.get_weather:0", "search:2", "functions.a.b:10"] {
            assert!(is_native_tool_call_id(id), "{id}");
        }
        for id in [
            "call_abc123",
            "functions_get_weather_1",
            "x:",
            ":1",
            "a<b:1",
            "f:1a",
        ] {
            assert!(!is_native_tool_call_id(id), "{id}");
        }
    }

    #[test]
    fn completion_texts() {
        let call = ToolCall {
            id: Some("functions.get_weather:0".into()),
            name: "get_weather".into(),
            arguments: Arguments::Object(json!({"city": "Paris", "n": 1.0})),
        };
        let raw = ToolCall {
            arguments: Arguments::Raw("{\"city\":\"Paris\"}".into()),
            ..call.clone()
        };
        // The turn's fields in `AssistantTurn`'s order.
        let turn = |reasoning: Option<&str>,
                    reasoning_closed: bool,
                    content: &str,
                    tool_calls: &[ToolCall],
                    end_of_turn: bool| AssistantTurn {
            reasoning: reasoning.map(String::from),
            reasoning_closed,
            content: content.into(),
            tool_calls: tool_calls.to_vec(),
            end_of_turn,
        };
        let k25 = completion_text(
            Family::KIMI_K25,
            true,
            &turn(Some("r"), true, "c", &[call], true),
        );
        assert_eq!(
            k25.unwrap(),
            "r</think>c<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0\
             <|tool_call_argument_begin|>{\"city\": \"Paris\", \"n\": 1.0}<|tool_call_end|>\
             <|tool_calls_section_end|><|im_end|>"
        );
        let inside = completion_text(
            Family::KIMI_K25,
            true,
            &turn(Some("r"), false, "", &[raw], false),
        );
        assert_eq!(
            inside.unwrap(),
            "r<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0\
             <|tool_call_argument_begin|>{\"city\":\"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"
        );
        let k2t = completion_text(
            Family::KIMI_K2_THINKING,
            true,
            &turn(Some("r"), true, "c", &[], true),
        );
        assert_eq!(k2t.unwrap(), "<think>r</think>c<|im_end|>");
        let k2 = completion_text(
            Family::KIMI_K2,
            false,
            &turn(Some("ignored"), true, "Four.", &[], true),
        );
        assert_eq!(k2.unwrap(), "Four.<|im_end|>");
        let off = completion_text(Family::KIMI_K25, false, &turn(None, false, "c", &[], true));
        assert_eq!(off.unwrap(), "c<|im_end|>");
    }
}
