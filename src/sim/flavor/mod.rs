//! Flavours: how one kind of server turns the model's sampled text into its API response.
//! Each flavour is one file with the same two functions, `response` (non-streaming body) and
//! `events` (the SSE stream). What the server does to the text — which field, what is stripped,
//! how ids are made — is not decided here but read from the flavour's [`ServerShape`]
//! (`crate::server`) through [`parsed`], the same definition the reconstruction checks its
//! candidates against; the files only add each server's JSON dressing.

pub mod openrouter;
pub mod raw;
pub mod sglang;
pub mod vllm;

use serde_json::{json, Value};

use super::faults::ToolDefect;
use crate::server::quirks::{HoldsBackPartialCharacters, SpacesAroundAddedTokens, Vllm011Stepwise};
use crate::server::{self, kimi, ForwardInput, Parsed, ServerShape};

/// Which server's response shape the simulator imitates: one flavour per server kind (and
/// version where shapes differ), each answering with that kind's [`ServerShape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Flavor {
    /// OpenRouter: `reasoning` + `reasoning_details`, `call_…` tool-call ids, normalized
    /// `finish_reason`, `provider`, usage with `cost`.
    #[default]
    OpenRouter,
    /// vLLM 0.33 with the `kimi_k2` reasoning and tool parsers: `reasoning` (trailing whitespace
    /// stripped), raw `functions.NAME:N` ids, `return_token_ids`.
    Vllm,
    /// vLLM's 0.11–0.2x line: as `vllm`, the reasoning in `reasoning_content`.
    Vllm011,
    /// SGLang 0.5: `reasoning_content`, `content` `""`, re-synthesized ids.
    Sglang,
    /// llama.cpp without a parser for the family: the raw text in `content`.
    LlamaCpp,
    /// No parsers: the whole native stream (markers included, stop token excluded) in `content`.
    Raw,
}

impl Flavor {
    pub const ALL: [Flavor; 6] = [
        Flavor::OpenRouter,
        Flavor::Vllm,
        Flavor::Vllm011,
        Flavor::Sglang,
        Flavor::LlamaCpp,
        Flavor::Raw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Flavor::OpenRouter => "openrouter",
            Flavor::Vllm => "vllm",
            Flavor::Vllm011 => "vllm-0.11",
            Flavor::Sglang => "sglang",
            Flavor::LlamaCpp => "llamacpp",
            Flavor::Raw => "raw",
        }
    }

    /// The server shape this flavour answers with.
    pub fn shape(self) -> &'static ServerShape {
        match self {
            Flavor::OpenRouter => &server::openrouter::SHAPE,
            Flavor::Vllm => &server::vllm::SHAPE,
            Flavor::Vllm011 => &server::vllm::SHAPE_0_11,
            Flavor::Sglang => &server::sglang::SHAPE,
            Flavor::LlamaCpp => &server::llamacpp::SHAPE,
            Flavor::Raw => &server::generic::SHAPE,
        }
    }
}

impl std::str::FromStr for Flavor {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Flavor::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown sim flavor {s:?}: expected one of {}",
                    Flavor::ALL.map(Flavor::name).join(", ")
                )
            })
    }
}

/// One answer, ready to be shaped: what the model sampled and what the server counted.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The response id (`gen-…`, `chatcmpl-…`).
    pub id: String,
    pub created: u64,
    pub model: String,
    /// The detokenized output without the stop token: what a server's parsers see.
    pub text: String,
    /// `text` without the partial character a cut may end on ([`Turn::partial_tokens`]).
    pub complete_text: String,
    /// The last sampled ids that end inside a character (a cut), whose text an incremental
    /// detokenizer waiting for whole characters never sends.
    pub partial_tokens: usize,
    /// Sampled ids (`<|im_end|>` included unless cut), when a tokenizer is loaded.
    pub token_ids: Option<Vec<u32>>,
    pub prompt_token_ids: Option<Vec<u32>>,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub reasoning_tokens: usize,
    /// `max_tokens` cut the answer.
    pub cut: bool,
    pub thinking: bool,
    pub tools_declared: bool,
    /// The request's `tools` (vLLM 0.33 coerces arguments to their schemas).
    pub tools: Vec<Value>,
    pub cost: f64,
    /// Ids for structured tool calls where the flavour mints its own (`call_<24 hex>`).
    pub minted_call_ids: Vec<String>,
    pub provider: String,
    pub spaces_around_special_tokens: bool,
    pub stream_chunk_chars: usize,
    pub exclude_reasoning: bool,
    pub return_token_ids: bool,
    pub llama_verbose_tokens: bool,
    pub include_usage: bool,
    /// Tool calls made by earlier assistant turns of the request.
    pub history_calls: usize,
    /// The prompt's ids hold the family's reasoning close (`server::ForwardInput`).
    pub prompt_closes_reasoning: bool,
    /// The first sampled token's text as the detokenizer sends it (`None`: no tokenizer).
    pub first_token: Option<String>,
    /// The last sampled token's text (`None`: no tokenizer, or nothing sampled).
    pub last_token: Option<String>,
    /// The end-of-turn id that ended the answer (`None`: cut, or no tokenizer).
    pub stop_token: Option<u32>,
    /// Stream one token's text per delta, split with this tokenizer (vLLM and SGLang do); `None`:
    /// pieces of `stream_chunk_chars` characters.
    pub token_deltas: Option<super::tokens::TokenCounter>,
    /// The family syntax of `text` (which parsers the server runs).
    pub syntax: server::Syntax,
    /// The flavour answering (the simulator's, or the named provider's).
    pub flavor: Flavor,
    /// The server shape it answers with (the flavour's, or [`SimConfig::shape`](super::SimConfig)).
    pub shape: &'static ServerShape,
    /// Tool-call defects injected into this answer ([`super::faults::ToolDefect`]).
    pub defects: Vec<ToolDefect>,
    /// A named provider answers: every flavour names it in a top-level `provider`.
    pub provider_in_body: bool,
}

/// The fields `shape` sends for this turn (streamed or not).
pub fn parsed(shape: &ServerShape, turn: &Turn, stream: bool) -> Parsed {
    let input = ForwardInput {
        text: detokenized(turn),
        cut: turn.cut,
        stream,
        spaces: turn.spaces_around_special_tokens && shape.quirks.has::<SpacesAroundAddedTokens>(),
        thinking: turn.thinking,
        tools_declared: turn.tools_declared,
        history_calls: turn.history_calls,
        syntax: turn.syntax,
        prompt_closes_reasoning: turn.prompt_closes_reasoning,
        first_token: turn.first_token.as_deref(),
        tools: Some(&turn.tools),
    };
    // With a tokenizer, a stream modelled token by token (vLLM 0.11.2's: its section buffer cut at
    // delta boundaries, the opener as the first token) is sent the way the server sends it.
    // The sampled ids, not the text re-encoded: a cut inside a character ends in ids the text
    // does not show. The end-of-turn id is the server's stop, not a delta.
    let tokens = match (&turn.token_deltas, &turn.token_ids) {
        (Some(counter), Some(ids)) if stream && shape.quirks.has::<Vllm011Stepwise>() => {
            let ids = match (turn.stop_token, ids.split_last()) {
                (Some(stop), Some((&last, rest))) if last == stop => rest,
                _ => ids.as_slice(),
            };
            counter.stream_tokens(ids)
        }
        _ => None,
    };
    let mut parsed = match tokens {
        Some(tokens) => server::forward_tokens(shape, &input, &tokens),
        None => server::forward(shape, &input),
    };
    // Parsers of families without ids in their stream mint random ones.
    for (i, call) in parsed.calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = turn
                .minted_call_ids
                .get(i)
                .map(|id| format!("chatcmpl-tool-{}", id.trim_start_matches("call_")))
                .unwrap_or_else(|| format!("chatcmpl-tool-{i:024}"));
        }
    }
    inject_defects(&mut parsed, turn);
    parsed
}

/// The text the shape's detokenizer hands its parsers ([`HoldsBackPartialCharacters`]).
pub fn detokenized(turn: &Turn) -> &str {
    if turn.shape.quirks.has::<HoldsBackPartialCharacters>() {
        &turn.complete_text
    } else {
        &turn.text
    }
}

/// Make a correct answer wrong the ways `turn.defects` say (each only where it applies: an
/// answer with calls). See [`ToolDefect`] for what each one does.
fn inject_defects(parsed: &mut Parsed, turn: &Turn) {
    if parsed.calls.is_empty() {
        return;
    }
    for defect in &turn.defects {
        let Some(first) = parsed.calls.first_mut() else {
            return;
        };
        match defect {
            ToolDefect::UndeclaredName => {
                let wrong = "undeclared_tool";
                if let Some((_, index)) = first.id.rsplit_once(':') {
                    if first.id.starts_with(&format!("functions.{}:", first.name)) {
                        first.id = format!("functions.{wrong}:{index}");
                    }
                }
                first.name = wrong.to_string();
            }
            ToolDefect::InvalidJson => {
                first.arguments.pop();
            }
            ToolDefect::SchemaViolation => first.arguments = "[]".to_string(),
            ToolDefect::WrongIdFormat => first.id = first.id.replace(['.', ':'], "_"),
            ToolDefect::MarkersInContent => {
                parsed
                    .content
                    .get_or_insert_with(String::new)
                    .push_str(kimi::SECTION_END);
            }
            ToolDefect::CallInReasoning => {
                let calls = std::mem::take(&mut parsed.calls);
                let reasoning = parsed.reasoning.get_or_insert_with(String::new);
                reasoning.push_str(kimi::SECTION_BEGIN);
                for call in &calls {
                    reasoning.push_str(kimi::CALL_BEGIN);
                    reasoning.push_str(&call.id);
                    reasoning.push_str(kimi::ARGUMENT_BEGIN);
                    reasoning.push_str(&call.arguments);
                    reasoning.push_str(kimi::CALL_END);
                }
                reasoning.push_str(kimi::SECTION_END);
                if parsed.finish_reason == "tool_calls" {
                    parsed.finish_reason = "stop";
                }
                return;
            }
            // Read by the openrouter flavour (`native_finish_reason`); decided in `answer`.
            ToolDefect::FinishDisagreement | ToolDefect::NeverCalls => {}
        }
    }
}

/// `native_finish_reason` for `finish_reason` (the same, unless the answer's provider disagrees).
pub fn native_finish_reason<'a>(turn: &Turn, finish: &'a str) -> &'a str {
    if finish == "tool_calls" && turn.defects.contains(&ToolDefect::FinishDisagreement) {
        "stop"
    } else {
        finish
    }
}

/// The reasoning field's name in `shape`'s answers.
pub fn reasoning_key(shape: &ServerShape) -> &'static str {
    match shape.reasoning_field {
        server::ReasoningField::Reasoning => "reasoning",
        server::ReasoningField::ReasoningContent | server::ReasoningField::Both => {
            "reasoning_content"
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A `: …` comment line (keep-alive).
    Comment(&'static str),
    Data(Value),
    /// `data: [DONE]`.
    Done,
}

impl Event {
    pub fn to_sse(&self) -> String {
        match self {
            Event::Comment(text) => format!(": {text}\n\n"),
            Event::Data(value) => format!("data: {value}\n\n"),
            Event::Done => "data: [DONE]\n\n".to_string(),
        }
    }
}

/// The non-streaming response body.
pub fn response(flavor: Flavor, turn: &Turn) -> Value {
    let mut body = match flavor {
        Flavor::OpenRouter => openrouter::response(turn),
        Flavor::Vllm | Flavor::Vllm011 => vllm::response(turn.shape, turn),
        Flavor::Sglang => sglang::response(turn),
        Flavor::LlamaCpp => llamacpp_dress(raw::response(turn), turn),
        Flavor::Raw => raw::response(turn),
    };
    name_provider(turn, &mut body);
    body
}

/// What llama.cpp's `llama-server` adds to a non-streamed answer (as recorded from the real
/// server, tests/data/real_server/): its build as `system_fingerprint` (`b0-unknown` when built
/// without git metadata) and a `timings` object — what tells it from a parser-less server.
fn llamacpp_dress(mut body: Value, turn: &Turn) -> Value {
    body["system_fingerprint"] = json!("b0-unknown");
    body["timings"] = json!({
        "cache_n": 0,
        "prompt_n": turn.prompt_tokens,
        "predicted_n": turn.completion_tokens,
    });
    body
}

/// The streaming response events.
pub fn events(flavor: Flavor, turn: &Turn) -> Vec<Event> {
    let mut events = match flavor {
        Flavor::OpenRouter => openrouter::events(turn),
        Flavor::Vllm | Flavor::Vllm011 => vllm::events(turn.shape, turn),
        Flavor::Sglang => sglang::events(turn),
        Flavor::LlamaCpp | Flavor::Raw => raw::events(turn),
    };
    for event in &mut events {
        if let Event::Data(chunk) = event {
            name_provider(turn, chunk);
        }
    }
    events
}

/// Behind the named-provider router every answer says who answered, as OpenRouter's do.
fn name_provider(turn: &Turn, body: &mut Value) {
    if let (true, Value::Object(map)) = (turn.provider_in_body, body) {
        map.insert("provider".into(), Value::from(turn.provider.as_str()));
    }
}

/// An OpenRouter-shaped mid-stream error chunk (OpenRouter's documented error shape), used by every flavour.
pub fn midstream_error(turn: &Turn) -> Value {
    json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "provider": turn.provider,
        "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    })
}

/// `text` in pieces of at most `size` characters (never splitting a character).
/// The server's own ids, as vLLM/SGLang (`return_token_ids`) and llama.cpp (`__verbose.tokens`)
/// put them in a non-streamed answer.
pub fn attach_token_ids(turn: &Turn, choice: &mut Value, body: &mut Value) {
    if turn.return_token_ids {
        choice["token_ids"] = json!(turn.token_ids);
        body["prompt_token_ids"] = json!(turn.prompt_token_ids);
    }
    if turn.llama_verbose_tokens {
        body["__verbose"] = json!({"tokens": turn.token_ids});
    }
}

/// The last streamed chunk that carries only `usage` (`stream_options.include_usage`).
pub fn usage_chunk(turn: &Turn, usage: Value) -> Event {
    Event::Data(json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "choices": [],
        "usage": usage,
    }))
}

pub fn chunks(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (at, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..at]);
            start = at;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The pieces a stream sends `text` in: one token's text each where the turn streams by token
/// ([`Turn::token_deltas`]), else [`chunks`] of `stream_chunk_chars`.
pub fn deltas<'a>(turn: &Turn, text: &'a str) -> Vec<&'a str> {
    let ends = turn.token_deltas.as_ref().and_then(|t| t.token_ends(text));
    match ends {
        Some(ends) => {
            let mut start = 0;
            ends.into_iter()
                .map(|end| {
                    let piece = &text[start..end];
                    start = end;
                    piece
                })
                .filter(|piece| !piece.is_empty())
                .collect()
        }
        None => chunks(text, turn.stream_chunk_chars),
    }
}

/// A chunk object around one `choices[0]` entry.
pub fn chunk(turn: &Turn, choice: Value) -> Value {
    json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "choices": [choice],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunks("añbc", 2), vec!["añ", "bc"]);
        assert_eq!(chunks("", 3), Vec::<&str>::new());
        assert_eq!(chunks("abc", 5), vec!["abc"]);
    }
}
