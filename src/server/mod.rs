//! Server shapes as data: how each server kind (and version, where it differs) turns the
//! model's text into a chat.completion.
//!
//! Every server kind is one [`ServerShape`] value (one file each: [`openrouter`], [`vllm`],
//! [`sglang`], [`llamacpp`], [`generic`]): which field carries the reasoning, and a list of
//! [`Quirk`]s — each thing the server does to an answer (strips, re-serializes, how it makes
//! tool-call ids, what a `length` cut inside the tool section does, spaces around special
//! tokens, its stream's own code), one file each in [`quirks`] (measured with the servers' own
//! code: tests/data/server_shapes/). The same value is read *forward* by [`forward`] — the parser,
//! then each quirk's forward effect in list order: the simulator's flavours answer with it, and
//! the reconstruction sends each candidate token stream through it to check it against the
//! answer received (analysis by synthesis) — and *backward* by the reconstruction, which reads
//! each quirk's inverse and enumerates what the shape is known to destroy.
//!
//! Adding a server version is one more `ServerShape` constant (the previous version's quirks
//! less and more, [`Quirks::on`]) and its fixtures; a new behaviour is one quirk file.

pub mod deepseek;
pub mod deepseek_v31;
pub mod deepseek_v32;
pub mod generic;
pub mod gpt_oss;
pub mod hermes;
pub mod kimi;
pub mod llama3;
pub mod llamacpp;
pub mod openrouter;
pub mod quirk;
pub mod quirks;
pub mod qwen3_coder;
pub mod read_back;
pub mod sglang;
pub mod vllm;
pub mod vllm011_stream;

use serde_json::Value;

pub use quirk::{CallIdForm, Evidence, InverseInput, Quirk, Quirks, Seen};
pub use read_back::{ReadBackRules, Site, SiteInput, UsageInput};

use crate::api::ServerKind;
use crate::completion::{Arguments, Completion};

/// Which message field carries the reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningField {
    /// `message.reasoning` (vLLM ≥ 0.12, OpenRouter).
    Reasoning,
    /// `message.reasoning_content` (SGLang, llama.cpp).
    ReasoningContent,
    /// `message.reasoning_content`, mirrored in `message.reasoning` (vLLM 0.11.2's own code).
    Both,
}

/// vLLM 0.11.2's `KimiK2ToolParser.buffer_max_size`.
pub const SECTION_LEAK_MAX_CHARS: usize = 1024;

/// One server kind and version: its answer's dressing and its [`Quirks`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerShape {
    pub kind: ServerKind,
    /// The version line this shape describes (`"0.33"`, `"0.11-0.2x"`, `"0.5"`; `""` when versions agree).
    pub version: &'static str,
    /// What this shape says is known (false for `generic`: the reconstruction then assumes
    /// nothing and checks only the token count).
    pub known: bool,
    /// Runs the family's reasoning and tool parsers (false: the raw text is `content`).
    pub parses: bool,
    pub reasoning_field: ReasoningField,
    /// Also sends `reasoning_details` (OpenRouter).
    pub reasoning_details: bool,
    /// Which versions of the kind answer this way.
    pub versions: Versions,
    /// Everything else it does to an answer, one [`Quirk`] each, in the order their forward
    /// effects apply.
    pub quirks: Quirks,
}

/// The versions a shape describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// The kind's newest line: every version no other shape of the kind claims.
    Newest,
    /// `major.minor` with `minor` from `first` up to, not including, `end` (a leading `v`
    /// ignored).
    Minors { major: u32, first: u32, end: u32 },
}

impl Versions {
    /// Whether `version` is one of these (never for [`Versions::Newest`], the fallback).
    pub fn claim(&self, version: &str) -> bool {
        let Versions::Minors { major, first, end } = *self else {
            return false;
        };
        let mut parts = version.trim_start_matches('v').split('.');
        let got_major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let got_minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        matches!((got_major, got_minor), (Some(a), Some(m)) if a == major && (first..end).contains(&m))
    }
}

/// Every known shape, newest version of each kind first.
pub const SHAPES: &[&ServerShape] = &[
    &openrouter::SHAPE,
    &vllm::SHAPE,
    &vllm::SHAPE_0_11,
    &sglang::SHAPE,
    &llamacpp::SHAPE,
    &generic::SHAPE,
];

/// The shape of `kind` at `version` (`None`: the newest known): the shape whose
/// [`Versions`] claim it, else the kind's newest ([`SHAPES`] lists it first). A version prefix
/// selects the line it belongs to: `0.11.2` or `0.20` → vLLM's 0.11–0.2x line.
pub fn shape(kind: ServerKind, version: Option<&str>) -> &'static ServerShape {
    let of_kind = || SHAPES.iter().copied().filter(move |s| s.kind == kind);
    version
        .and_then(|v| of_kind().find(|s| s.versions.claim(v)))
        .or_else(|| of_kind().next())
        .unwrap_or(&generic::SHAPE)
}

/// The user-facing name of a server kind (`--kind`).
pub fn kind_name(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::OpenRouter => "openrouter",
        ServerKind::Vllm => "vllm",
        ServerKind::Sglang => "sglang",
        ServerKind::LlamaCpp => "llamacpp",
        ServerKind::Generic => "generic",
    }
}

impl ServerShape {
    /// The detokenizer spacings its answers come in: with and without spaces around added
    /// tokens where it puts them ([`quirks::SpacesAroundAddedTokens`]: a per-request setting
    /// in vLLM), else without.
    pub fn spacings(&self) -> &'static [bool] {
        if self.quirks.has::<quirks::SpacesAroundAddedTokens>() {
            &[false, true]
        } else {
            &[false]
        }
    }

    /// `vllm 0.33`, `sglang 0.5`, `openrouter`.
    pub fn describe(&self) -> String {
        if self.version.is_empty() {
            kind_name(self.kind).to_string()
        } else {
            format!("{} {}", kind_name(self.kind), self.version)
        }
    }
}

/// The model family's output syntax, which decides which parsers a server runs on it (a family
/// property: [`FamilySpec::syntax`](crate::model::family::FamilySpec::syntax)). Only [`forward`]
/// and [`parser_traits`] map it to its parser; everything else reads the parser's traits.
pub use crate::model::family::Syntax;

/// What the servers' parsers for one syntax do whatever the shape (each parser file's `TRAITS`,
/// measured with the servers' own code: tests/data/server_shapes). Quirks measured on one
/// parser, and the reconstruction, read these instead of asking which syntax it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParserTraits {
    /// Its reasoning parser can strip the reasoning's trailing whitespace, where the shape does
    /// ([`quirks::StripsReasoningTrailingWhitespace`]).
    pub strips_reasoning_trailing_whitespace: bool,
    /// Whitespace-only content before calls can become `null` ([`quirks::NullsWhitespaceContent`]):
    /// in a non-streamed answer.
    pub nulls_whitespace_content: bool,
    /// … and in a streamed one.
    pub nulls_streamed_whitespace_content: bool,
    /// A call's arguments are the text between two markers as the model wrote it, so a shape can
    /// strip the whitespace around them ([`quirks::StripsArguments`]).
    pub strippable_arguments: bool,
    /// vLLM's parser engine can coerce its non-streamed arguments to the request's schema
    /// ([`quirks::CoercesArguments`]).
    pub coerces_arguments: bool,
    /// Its vLLM 0.11.2 streaming parser is ported token by token
    /// ([`quirks::Vllm011Stepwise`], [`vllm011_stream`]).
    pub stream_ported: bool,
    /// SGLang's detector for it never fills a call's arguments in
    /// ([`quirks::CompletesEmptyLastArguments`]).
    pub detector_leaves_arguments_empty: bool,
    /// Its tool parser is a regex over finished calls: an unfinished call is never sent whole,
    /// whatever the shape does.
    pub drops_unfinished_call: bool,
    /// Its tool parser reads each call and writes it anew: arguments re-serialized when not
    /// streamed, the call wrapper's spacing dropped streamed or not (ids minted).
    pub rewrites_calls: bool,
    /// Streamed, the text between calls (and after the last one at a cut) reaches `content`.
    pub streams_call_separators: bool,
    /// Streamed, the text the model wrote between or after its calls is appended to `content`:
    /// the answer cannot show which part of `content` came before the tool section.
    pub streams_text_after_calls: bool,
    /// Streamed by vLLM 0.33's parser engine, a call's header comes with its first argument
    /// piece (the simulator's streams; vLLM 0.11's parser sends the name alone).
    pub streams_call_header_with_arguments: bool,
    /// A streamed tool-call delta carries `content: null` (the simulator's streams).
    pub null_content_in_call_deltas: bool,
    /// Its tool parser reads every value as text and converts it by the request's schema
    /// (qwen3_coder): a value that is not a string keeps none of the model's spelling.
    pub converts_values_by_schema: bool,
}

impl ParserTraits {
    /// A parser that does none of these.
    pub const NONE: ParserTraits = ParserTraits {
        strips_reasoning_trailing_whitespace: false,
        nulls_whitespace_content: false,
        nulls_streamed_whitespace_content: false,
        strippable_arguments: false,
        coerces_arguments: false,
        stream_ported: false,
        detector_leaves_arguments_empty: false,
        drops_unfinished_call: false,
        rewrites_calls: false,
        streams_call_separators: false,
        streams_text_after_calls: false,
        streams_call_header_with_arguments: false,
        null_content_in_call_deltas: false,
        converts_values_by_schema: false,
    };
}

/// The traits of the servers' parsers for `syntax`.
pub fn parser_traits(syntax: Syntax) -> &'static ParserTraits {
    match syntax {
        Syntax::Kimi => &kimi::TRAITS,
        Syntax::Hermes => &hermes::TRAITS,
        Syntax::DeepseekV3 => &deepseek::TRAITS,
        Syntax::DeepseekV31 => &deepseek_v31::TRAITS,
        Syntax::DeepseekV32 => &deepseek_v32::TRAITS,
        Syntax::Qwen3Coder => &qwen3_coder::TRAITS,
        Syntax::Harmony => &gpt_oss::TRAITS,
        Syntax::Llama3Json => &llama3::TRAITS,
    }
}

/// What the model wrote and how it was asked: the input of [`forward`].
#[derive(Debug, Clone, Copy)]
pub struct ForwardInput<'a> {
    /// The model's text without its end-of-turn token, as the server detokenizes it.
    pub text: &'a str,
    /// `max_tokens` cut the answer (no end-of-turn token).
    pub cut: bool,
    pub stream: bool,
    /// The detokenizer puts a space around every added token.
    pub spaces: bool,
    pub thinking: bool,
    /// Tools were declared (the tool parser runs).
    pub tools_declared: bool,
    /// Tool calls made by earlier assistant turns (SGLang's id numbering continues from there).
    pub history_calls: usize,
    pub syntax: Syntax,
    /// The prompt's ids hold the family's reasoning close (an earlier turn's `</think>`, or a
    /// thinking-off generation prompt): vLLM 0.11.2 then streams the first token as reasoning
    /// and sends everything after it through the tool parser ([`quirks::StreamsFirstTokenAsReasoning`]).
    pub prompt_closes_reasoning: bool,
    /// The text of the answer's first token as the detokenizer sent it (`""` when it ends inside
    /// a character), where a shape needs it; `None`: unknown.
    pub first_token: Option<&'a str>,
    /// The request's `tools`, where a quirk's forward effect reads their schemas
    /// ([`quirks::CoercesArguments`]); `None`: such effects are not applied.
    pub tools: Option<&'a [Value]>,
}

/// One tool call as the server reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The fields a server sends for one answer (before JSON).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub reasoning: Option<String>,
    pub content: Option<String>,
    pub calls: Vec<ParsedCall>,
    pub finish_reason: &'static str,
    /// Content a stream sends after its tool calls ([`quirks::LeaksSectionBuffer`]); the
    /// assembled answer's `content` is `content` followed by this.
    pub content_after_calls: Option<String>,
    /// This shape's answer to the text is not modelled (why): no answer agrees with it.
    pub unmodelled: Option<&'static str>,
    /// The calls' ids are the model's text (or derived from it): an answer's must be equal.
    pub call_ids_checked: bool,
    /// The parser converts the calls' values by the request's schema, which [`forward`] may not
    /// have had: an answer's values may be this text's coerced.
    pub values_typed_by_schema: bool,
    /// The text ends with a token that stops generation other than the family's end-of-turn
    /// token (harmony's `<|call|>`): the model stopped, nothing cut it.
    pub stopped: bool,
}

/// The answer `shape` would send for the Kimi-format text in `input` (the Completion view; the
/// simulator turns it into JSON). Call ids the shape mints itself are left as the model's id
/// text here; the caller replaces them ([`quirks::MintsCallIds`]).
pub fn forward(shape: &ServerShape, input: &ForwardInput) -> Parsed {
    let spaced;
    let text = if input.spaces {
        spaced = kimi::spaced_after_prompt(input.text);
        spaced.as_str()
    } else {
        input.text
    };
    if !shape.parses {
        return Parsed {
            reasoning: None,
            content: Some(text.to_string()),
            calls: Vec::new(),
            finish_reason: if input.cut { "length" } else { "stop" },
            ..Parsed::default()
        };
    }
    let mut parsed = match input.syntax {
        Syntax::Kimi => kimi::parse(shape, text, input),
        Syntax::Hermes => hermes::parse(text, input.thinking, input.tools_declared, input.stream),
        Syntax::DeepseekV3 => deepseek::parse(text, input.tools_declared, input.stream),
        Syntax::DeepseekV31 => {
            deepseek_v31::parse(text, input.thinking, input.tools_declared, input.stream)
        }
        Syntax::DeepseekV32 => deepseek_v32::parse_by(shape.kind, text, input),
        Syntax::Qwen3Coder => {
            qwen3_coder::parse(text, input.tools_declared, input.stream, input.tools)
        }
        Syntax::Harmony => gpt_oss::parse(text, input.stream),
        Syntax::Llama3Json => llama3::parse(text, input.tools_declared, input.stream),
    };
    if parsed.content.as_deref() == Some("") {
        parsed.content = None;
    }
    parsed.call_ids_checked = true;
    let stopped = ForwardInput {
        cut: input.cut && !parsed.stopped,
        ..*input
    };
    parsed.finish_reason = if stopped.cut { "length" } else { "stop" };
    for quirk in shape.quirks.all() {
        quirk.forward(shape, &stopped, &mut parsed);
    }
    parsed
}

/// [`forward`] for a text whose tokens are known: a quirk that models the stream token by token
/// ([`Quirk::forward_tokens`], vLLM 0.11.2's [`quirks::Vllm011Stepwise`]) gives the answer; any
/// other answer is [`forward`]'s. `tokens` are `input.text`'s (the end-of-turn token excluded).
pub fn forward_tokens(
    shape: &ServerShape,
    input: &ForwardInput,
    tokens: &[vllm011_stream::Token],
) -> Parsed {
    shape
        .quirks
        .all()
        .iter()
        .find_map(|quirk| quirk.forward_tokens(shape, input, tokens))
        .unwrap_or_else(|| forward(shape, input))
}

/// Where a forward answer and the received one differ (for the warning).
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch(pub String);

impl Parsed {
    /// Compare with the answer received: text fields (`null` and `""` alike), tool calls (name,
    /// arguments; the id where the shape keeps or derives it), `finish_reason`.
    pub fn agrees_with(&self, shape: &ServerShape, got: &Completion) -> Result<(), Mismatch> {
        if let Some(why) = self.unmodelled {
            return Err(Mismatch(why.into()));
        }
        let norm = |s: Option<&str>| s.unwrap_or_default().to_string();
        if norm(self.reasoning.as_deref()) != norm(got.reasoning.as_deref()) {
            return Err(Mismatch("reasoning".into()));
        }
        let content = norm(self.content.as_deref()) + &norm(self.content_after_calls.as_deref());
        if content != norm(got.content.as_deref()) {
            return Err(Mismatch("content".into()));
        }
        if self.calls.len() != got.tool_calls.len() {
            return Err(Mismatch(format!(
                "{} tool calls, the answer has {}",
                self.calls.len(),
                got.tool_calls.len()
            )));
        }
        for (i, (mine, theirs)) in self.calls.iter().zip(&got.tool_calls).enumerate() {
            if mine.name != theirs.name {
                return Err(Mismatch(format!("tool call {i} name")));
            }
            let same_args = match &theirs.arguments {
                Arguments::Raw(text) => *text == mine.arguments,
                Arguments::Object(value) => {
                    serde_json::from_str::<Value>(&mine.arguments).ok().as_ref() == Some(value)
                }
            };
            let coerced = (shape.quirks.has::<quirks::CoercesArguments>()
                || self.values_typed_by_schema)
                && coerced_alike(&mine.arguments, &theirs.arguments);
            if !same_args && !coerced {
                return Err(Mismatch(format!("tool call {i} arguments")));
            }
            let derived = self.call_ids_checked && !mine.id.is_empty();
            if derived && theirs.id.as_deref() != Some(mine.id.as_str()) {
                return Err(Mismatch(format!("tool call {i} id")));
            }
        }
        if let Some(finish) = got.finish_reason.as_deref() {
            if finish != self.finish_reason {
                return Err(Mismatch("finish_reason".into()));
            }
        }
        Ok(())
    }
}

/// Whether the server's arguments can be the model's coerced to a schema and re-serialized:
/// the same JSON shape, every scalar equal or a string spelling the other's JSON (`"3"` and `3`,
/// `"false"` and `false`), and at least one such change (without one the server sends the
/// model's text as it was). Which values a schema coerces is not known here; what is known is
/// that coercion changes types, never keys, lengths or the values themselves.
fn coerced_alike(mine: &str, theirs: &Arguments) -> bool {
    /// `None`: not alike; `Some(changed)`: alike, with or without a type change.
    fn alike(a: &Value, b: &Value) -> Option<bool> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) if x.len() == y.len() => {
                x.iter().try_fold(false, |changed, (k, v)| {
                    Some(changed | alike(v, y.get(k)?)?)
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .try_fold(false, |changed, (v, w)| Some(changed | alike(v, w)?)),
            // A string the server parsed into an object or array counts too (qwen3_coder reads
            // every value as text and converts it by the schema).
            (Value::String(s), other) | (other, Value::String(s)) if !other.is_string() => {
                (serde_json::from_str::<Value>(s).ok().as_ref() == Some(other)).then_some(true)
            }
            _ => (a == b).then_some(false),
        }
    }
    let Ok(mine) = serde_json::from_str::<Value>(mine) else {
        return false;
    };
    let theirs = match theirs {
        Arguments::Raw(text) => match serde_json::from_str::<Value>(text) {
            Ok(value) => value,
            Err(_) => return false,
        },
        Arguments::Object(value) => value.clone(),
    };
    alike(&mine, &theirs) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> ForwardInput<'_> {
        ForwardInput {
            text,
            cut: false,
            stream: false,
            spaces: false,
            thinking: true,
            tools_declared: true,
            history_calls: 2,
            syntax: Syntax::Kimi,
            prompt_closes_reasoning: false,
            first_token: None,
            tools: None,
        }
    }

    const CALLS: &str = "why \n</think> <|tool_calls_section_begin|><|tool_call_begin|>functions.f:7<|tool_call_argument_begin|> {\"a\":1} <|tool_call_end|><|tool_calls_section_end|>";

    #[test]
    fn vllm_strips_and_nulls_sglang_resynthesizes() {
        let v = forward(&vllm::SHAPE, &input(CALLS));
        assert_eq!(v.reasoning.as_deref(), Some("why"));
        assert_eq!(v.content, None);
        assert_eq!(v.calls[0].id, "functions.f:7");
        assert_eq!(v.calls[0].arguments, "{\"a\":1}");
        assert_eq!(v.finish_reason, "tool_calls");

        let s = forward(&sglang::SHAPE, &input(CALLS));
        assert_eq!(s.reasoning.as_deref(), Some("why \n"));
        assert_eq!(s.content.as_deref(), Some(" "));
        assert_eq!(s.calls[0].id, "functions.f:2");
    }

    #[test]
    fn streamed_vllm_keeps_argument_whitespace() {
        let v = forward(
            &vllm::SHAPE,
            &ForwardInput {
                stream: true,
                ..input(CALLS)
            },
        );
        assert_eq!(v.calls[0].arguments, " {\"a\":1} ");
        // vLLM 0.33 holds back the reasoning's trailing whitespace in a stream too.
        assert_eq!(v.reasoning.as_deref(), Some("why"));
    }

    #[test]
    fn coercion_changes_types_never_keys_or_spellings() {
        // kimi_k25/vllm-0.33.0/nonstream/nospaces/schema_mismatch/001: the model wrote
        // `{"count": "3"}`, vLLM 0.33 answered `{"count": 3}`.
        let answered = Arguments::Raw("{\"count\": 3}".into());
        assert!(coerced_alike("{\"count\": \"3\"}", &answered));
        assert!(!coerced_alike("{\"count\": \"4\"}", &answered));
        assert!(!coerced_alike("{\"amount\": \"3\"}", &answered));
        assert!(!coerced_alike("{\"count\": \"3", &answered));
        // No type changed: the server would have sent the model's own text.
        assert!(!coerced_alike("{\"count\":3}", &answered));
        // qwen3_coder: an object or array value written as text, parsed by the schema.
        let object = Arguments::Raw("{\"o\": {\"a\": [1]}}".into());
        assert!(coerced_alike("{\"o\": \"{\\\"a\\\": [1]}\"}", &object));
        assert!(!coerced_alike("{\"o\": \"{\\\"a\\\": [2]}\"}", &object));
    }

    /// vLLM 0.11.2's own streamed answers (tests/data/server_shapes/kimi_k25_vllm011.jsonl).
    fn old_stream(text: &str, spaces: bool) -> Parsed {
        forward(
            &vllm::SHAPE_0_11,
            &ForwardInput {
                stream: true,
                spaces,
                history_calls: 0,
                ..input(text)
            },
        )
    }

    const TWO: &str = "why</think>Checking both.<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": 1}<|tool_call_end|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>\n{\"a\": 2}\n<|tool_call_end|><|tool_calls_section_end|>";

    #[test]
    fn vllm_011_streams_leak_the_section_buffer() {
        // …/stream/nospaces/parallel_2_calls/001: the content streamed, then at the section's
        // end the buffer — the content again and the calls' raw text, section markers cut.
        let p = old_stream(TWO, false);
        assert_eq!(p.content.as_deref(), Some("Checking both."));
        assert_eq!(
            p.content_after_calls.as_deref(),
            Some("Checking both.<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": 1}<|tool_call_end|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>\n{\"a\": 2}\n<|tool_call_end|>")
        );
        // …/stream/nospaces/args_ws/002: streamed arguments skip leading whitespace and stop at
        // the first newline.
        assert_eq!(p.calls[1].arguments, "{\"a\": 2}");
        // …/stream/spaces/parallel_2_calls/001: the `</think>` and opener deltas (with their
        // joining spaces) are dropped; the buffer keeps the opener's space.
        let p = old_stream(TWO, true);
        assert_eq!(p.reasoning.as_deref(), Some(" why"));
        assert_eq!(p.content.as_deref(), Some(" Checking both."));
        assert!(p.content_after_calls.as_deref().is_some_and(|c| c
            .starts_with(" Checking both.  <|tool_call_begin|> functions.f:0 ")
            && c.ends_with("<|tool_call_end|> ")));
        assert_eq!(p.calls[0].arguments, "{\"a\": 1}");
        // Not streamed, or the newer line: nothing leaks.
        let plain = forward(
            &vllm::SHAPE_0_11,
            &ForwardInput {
                history_calls: 0,
                ..input(TWO)
            },
        );
        assert_eq!(plain.content_after_calls, None);
        let newer = forward(
            &vllm::SHAPE,
            &ForwardInput {
                stream: true,
                ..input(TWO)
            },
        );
        assert_eq!(newer.content_after_calls, None);
        // A cut inside the section: it never closed, nothing was sent.
        let cut = TWO.strip_suffix("<|tool_calls_section_end|>").unwrap();
        let p = forward(
            &vllm::SHAPE_0_11,
            &ForwardInput {
                stream: true,
                cut: true,
                history_calls: 0,
                ..input(cut)
            },
        );
        assert_eq!(p.content_after_calls, None);
    }

    #[test]
    fn vllm_011_streams_the_first_token_as_reasoning_after_an_earlier_close() {
        // …/stream/nospaces/history_offset/001: `</think>` in the prompt's history.
        let text = "The plan.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
        let p = forward(
            &vllm::SHAPE_0_11,
            &ForwardInput {
                stream: true,
                prompt_closes_reasoning: true,
                first_token: Some("The"),
                ..input(text)
            },
        );
        assert_eq!(p.reasoning.as_deref(), Some("The"));
        assert_eq!(p.content.as_deref(), Some(" plan.</think>"));
        assert_eq!(p.calls.len(), 1);
        // Without the first token's text the answer is not modelled (never agrees).
        let p = forward(
            &vllm::SHAPE_0_11,
            &ForwardInput {
                stream: true,
                prompt_closes_reasoning: true,
                ..input(text)
            },
        );
        assert!(p.unmodelled.is_some());
        assert!(p
            .agrees_with(&vllm::SHAPE_0_11, &Completion::default())
            .is_err());
    }

    #[test]
    fn versions_select_lines() {
        assert_eq!(shape(ServerKind::Vllm, Some("0.11.2")).version, "0.11-0.2x");
        assert_eq!(shape(ServerKind::Vllm, Some("0.33.0")).version, "0.33");
        assert_eq!(shape(ServerKind::Vllm, None).version, "0.33");
        assert_eq!(
            shape(ServerKind::Vllm, Some("v0.20.1")).version,
            "0.11-0.2x"
        );
        assert_eq!(shape(ServerKind::Vllm, Some("0.30.0")).version, "0.33");
        assert_eq!(shape(ServerKind::Vllm, Some("1.11")).version, "0.33");
        assert_eq!(shape(ServerKind::Sglang, Some("0.11.2")).version, "0.5");
        assert_eq!(shape(ServerKind::LlamaCpp, None).kind, ServerKind::LlamaCpp);
        assert_eq!(
            shape(ServerKind::Vllm, Some("0.11.0")).reasoning_field,
            ReasoningField::Both
        );
    }
}
