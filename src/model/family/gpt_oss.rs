//! gpt-oss (OpenAI's harmony format: `<|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>`).
//!
//! - The generation prompt ends with `<|start|>assistant`; the model then writes one message per
//!   channel: its reasoning `<|channel|>analysis<|message|>REASONING<|end|>`, then, each after
//!   `<|start|>assistant`, the answer `<|channel|>final<|message|>CONTENT<|return|>` or a tool call
//!   `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>` (the
//!   header as the model writes it; vLLM's `harmony_utils.py` rewrites such headers in history to
//!   the older `assistant to=functions.NAME<|channel|>commentary json`, which is also how the
//!   template renders history). Text before a call goes to the `commentary` channel.
//! - A turn ends with `<|return|>` (an answer) or `<|call|>` (a tool call): both stop generation,
//!   so a turn makes at most one call in practice. No ids in the token stream: servers mint them.
//! - The model always reasons; how hard is the `reasoning_effort` template kwarg (the system
//!   message says `Reasoning: medium` by default). Servers return the analysis channel as
//!   `reasoning_content` / `reasoning`.
//! - Built-in template: `templates/openai-gpt-oss-120b.jinja`, llama.cpp's
//!   `models/templates/openai-gpt-oss-120b.jinja` (MIT, `tests/assets/templates/LICENSE-llama.cpp`).
//!   It writes the day it renders (`strftime_now`) into the system message: a rebuild writes the
//!   day of the answer's `created` (in UTC; a server in another time zone may have written
//!   another).
//! - vLLM renders gpt-oss prompts with `openai_harmony`, not with the template (measured in
//!   `tests/gpt_oss.rs`): without tools its developer message has no blank line after the
//!   instructions, history with tool calls and results is written differently (content before a
//!   call as `commentary`, results unquoted, every call), reasoning is read from `reasoning`, not
//!   `thinking`. Most such prompts differ in length (the answer's `prompt_tokens` flags them); the
//!   missing blank line does not, so a request with a system message and no tools is flagged
//!   (`FamilyRules::prompt_doubt`: `ambiguous`, `prompt_render_differs`) unless the server is
//!   llama.cpp, which renders the template.
//! - Tokenizer: the o200k_harmony vocabulary (`tests/assets/README.md`).

use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, PromptStack, Syntax};
use crate::completion::Arguments;
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};
use serde_json::Value;

pub const START: &str = "<|start|>";
pub const CHANNEL: &str = "<|channel|>";
pub const MESSAGE: &str = "<|message|>";
pub const END: &str = "<|end|>";
pub const RETURN: &str = "<|return|>";
pub const CALL: &str = "<|call|>";
pub const CONSTRAIN: &str = "<|constrain|>";

pub const SPEC: FamilySpec = FamilySpec {
    name: "gpt-oss",
    detect_order: 40,
    builtin_template: Some(include_str!("templates/openai-gpt-oss-120b.jinja")),
    end_of_turn: Some(RETURN),
    // The reasoning ends with `<|end|>`, which also ends every other message: no marker of its
    // own for the reconstruction to split a raw answer at.
    reasoning_close: None,
    tool_section_begin: None,
    thinking_switch: None,
    // Every answer goes through the harmony parser: an answer without reasoning is parsed too,
    // never the raw stream.
    always_thinks: true,
    syntax: Some(Syntax::Harmony),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_THINKING,
    tool_grammar: None,
    distinctive_markers: &[CHANNEL, MESSAGE, CONSTRAIN],
};

impl Family {
    pub const GPT_OSS: Family = Family::new(&GptOss);
}

pub const FAMILIES: &[Family] = &[Family::GPT_OSS];

/// gpt-oss's rules: detection and the native completion text.
pub struct GptOss;

impl FamilyRules for GptOss {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// `model_type: gpt_oss`, or harmony's `<|channel|>` in the tokenizer or the template.
    fn detect(&self, model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        model_type == "gpt_oss" || tokenizer_config.contains(CHANNEL) || template.contains(CHANNEL)
    }

    /// `openai/gpt-oss-120b`, `openai/gpt-oss-20b`, `…:free`, `gpt-oss-120b`.
    fn detect_model_id(&self, model_id: &str) -> bool {
        let id = model_id.to_ascii_lowercase();
        let name = id.rsplit('/').next().unwrap_or_default();
        name.starts_with("gpt-oss")
    }

    fn history_turn_ends(&self) -> &'static [&'static str] {
        &[END, CALL]
    }

    /// A first system or developer message and no tools: the template writes a blank line after
    /// the instructions and vLLM's harmony render does not, and `.\n\n` and `.` are one token each.
    /// llama.cpp renders the template it was given: no doubt there.
    fn prompt_doubt(
        &self,
        messages: &[Value],
        tools: Option<&[Value]>,
        stack: PromptStack,
    ) -> Option<&'static str> {
        if stack == PromptStack::LlamaCpp {
            return None;
        }
        let role = messages.first().and_then(|m| m.get("role")?.as_str());
        let instructed = matches!(role, Some("system" | "developer"));
        let tools = tools.is_some_and(|t| !t.is_empty());
        (instructed && !tools).then_some(
            "vLLM renders gpt-oss prompts with openai_harmony, which writes no blank line after the developer instructions where the template (llama.cpp, SGLang) does; the count is the same either way; rendered as the template does",
        )
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(turn)))
    }
}

/// The text a gpt-oss model generated for one turn after the generation prompt
/// (`<|start|>assistant`): its messages, joined by `<|start|>assistant`. A turn cut by
/// `max_tokens` ends inside its last message: the reasoning when nothing follows it, else the
/// answer or the last call.
pub fn completion_text(turn: &AssistantTurn) -> String {
    let mut messages: Vec<String> = Vec::new();
    let nothing_after_reasoning = turn.content.is_empty() && turn.tool_calls.is_empty();
    if let Some(reasoning) = &turn.reasoning {
        let open = !turn.reasoning_closed || (!turn.end_of_turn && nothing_after_reasoning);
        let close = if open { "" } else { END };
        messages.push(format!("{CHANNEL}analysis{MESSAGE}{reasoning}{close}"));
        if open {
            return messages.concat();
        }
    }
    let end = |last: bool, closer: &str| {
        if !last || turn.end_of_turn {
            closer.to_string()
        } else {
            String::new()
        }
    };
    if turn.tool_calls.is_empty() {
        let close = end(true, RETURN);
        messages.push(format!("{CHANNEL}final{MESSAGE}{}{close}", turn.content));
    } else {
        if !turn.content.is_empty() {
            messages.push(format!("{CHANNEL}commentary{MESSAGE}{}{END}", turn.content));
        }
        let last = turn.tool_calls.len() - 1;
        for (i, call) in turn.tool_calls.iter().enumerate() {
            let arguments = match &call.arguments {
                Arguments::Raw(text) => text.clone(),
                Arguments::Object(value) => dumps_json(value, &compact()),
            };
            let close = end(i == last, CALL);
            messages.push(format!(
                "{CHANNEL}commentary to=functions.{} {CONSTRAIN}json{MESSAGE}{arguments}{close}",
                call.name
            ));
        }
    }
    messages.join(&format!("{START}assistant"))
}

/// The model writes its arguments as compact JSON.
fn compact() -> DumpOptions {
    DumpOptions {
        separators: Some((",".into(), ":".into())),
        ..DumpOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;

    /// The blank line is vLLM's difference: doubted wherever the stack could be vLLM, not under
    /// llama.cpp, which renders the template.
    #[test]
    fn the_instructions_doubt_spares_llama_cpp() {
        let messages = [
            serde_json::json!({"role": "developer", "content": "Be brief."}),
            serde_json::json!({"role": "user", "content": "Hi"}),
        ];
        for (stack, doubted) in [
            (PromptStack::Vllm, true),
            (PromptStack::Unknown, true),
            (PromptStack::Sglang, true),
            (PromptStack::LlamaCpp, false),
        ] {
            let doubt = GptOss.prompt_doubt(&messages, None, stack);
            assert_eq!(doubt.is_some(), doubted, "{stack:?}");
        }
    }

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        for id in [
            "openai/gpt-oss-120b",
            "openai/gpt-oss-20b",
            "openai/gpt-oss-120b:free",
            "gpt-oss-20b",
        ] {
            assert_eq!(Family::from_model_id(id), Some(Family::GPT_OSS), "{id}");
        }
        for id in ["openai/gpt-4o", "qwen/qwen3-8b", "deepseek/deepseek-chat"] {
            assert_ne!(Family::from_model_id(id), Some(Family::GPT_OSS), "{id}");
        }
    }

    #[test]
    fn detected_from_its_directory() {
        assert!(GptOss.detect("gpt_oss", "", ""));
        assert!(GptOss.detect("", "{\"200005\": \"<|channel|>\"}", ""));
        assert!(!GptOss.detect("qwen3", "<|im_start|>", "<think>"));
    }

    #[test]
    fn completion_text_writes_harmony_messages() {
        let answer = AssistantTurn {
            reasoning: Some("User greets.".into()),
            reasoning_closed: true,
            content: "Hi!".into(),
            tool_calls: Vec::new(),
            end_of_turn: true,
        };
        assert_eq!(
            completion_text(&answer),
            "<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant\
             <|channel|>final<|message|>Hi!<|return|>"
        );
        let call = AssistantTurn {
            reasoning: Some("Need weather.".into()),
            reasoning_closed: true,
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: None,
                name: "get_weather".into(),
                arguments: Arguments::Object(serde_json::json!({"city": "Paris"})),
            }],
            end_of_turn: true,
        };
        assert_eq!(
            completion_text(&call),
            "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant\
             <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>\
             {\"city\":\"Paris\"}<|call|>"
        );
        // Cut in the reasoning, and in the answer.
        let cut = AssistantTurn {
            end_of_turn: false,
            content: String::new(),
            ..answer.clone()
        };
        assert_eq!(
            completion_text(&cut),
            "<|channel|>analysis<|message|>User greets."
        );
        let cut = AssistantTurn {
            end_of_turn: false,
            ..answer
        };
        assert!(completion_text(&cut).ends_with("<|channel|>final<|message|>Hi!"));
    }
}
