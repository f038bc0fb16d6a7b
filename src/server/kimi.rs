//! The Kimi parsers every parsing server shape runs (tests/data/server_shapes/kimi_k25*.jsonl), plus vLLM's detokenizer
//! artefact (§B4):
//!
//! - reasoning (`kimi_k25`): a leading `<think>` is consumed; reasoning ends at the earliest of
//!   `</think>` (dropped), `<|tool_calls_section_begin|>` or `<|tool_call_begin|>` (both kept in
//!   content); no end marker means everything is reasoning; nothing is trimmed here (the shape
//!   decides); with `thinking: false` the parser is the identity.
//! - tools (`kimi_k2`): only when the content holds `<|tool_calls_section_begin|>`; each call
//!   matched by vLLM's regex, `id` = the raw id text, `name` = `id.split(":")[0].split(".")[-1]`,
//!   `arguments` = the raw text, stripped where the shape strips; content = the text before the
//!   section. Streamed, a call cut after its `<|tool_call_argument_begin|>` is sent with the
//!   argument text so far (the deltas went out before the cut); vLLM 0.33 keeps it unstreamed
//!   too, and makes a bogus call of one cut inside its id (`unfinished_call`). A cut that leaves
//!   the section with no call to send drops the section's text where the shape says so
//!   (`quirks::DropsCutSection`).

use std::sync::LazyLock;

use fancy_regex::Regex;

use super::quirks::{
    BogusCallForCutId, DropsCutSection, DropsIncompleteCall, DropsSectionBeginDelta,
    DropsThinkEndDelta, IgnoresThinkingOff, LeaksSectionBuffer, ReasoningEndsOnlyAtThinkEnd,
    StreamsArgumentsFirstLine, StreamsFirstTokenAsReasoning, StreamsSectionTextAsContent,
    StripsArguments, StripsStreamedArguments,
};
use super::{ForwardInput, Parsed, ParsedCall, ParserTraits, ServerShape};

use crate::model::family::kimi::{reasoning_end, SECTION_BEGIN_SINGULAR, THINK_BEGIN};
pub use crate::model::family::kimi::{
    ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END, THINK_END,
};

/// The `kimi_k2` parsers (vLLM's reasoning and tool parsers, SGLang's `KimiK2Detector`).
pub const TRAITS: ParserTraits = ParserTraits {
    strips_reasoning_trailing_whitespace: true,
    nulls_whitespace_content: true,
    nulls_streamed_whitespace_content: true,
    strippable_arguments: true,
    coerces_arguments: true,
    stream_ported: true,
    detector_leaves_arguments_empty: true,
    streams_call_header_with_arguments: true,
    ..ParserTraits::NONE
};

/// vLLM's `kimi_k2` tool-call regex (DOTALL).
static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)<\|tool_call_begin\|>\s*(?P<tool_call_id>[^<]+:\d+)\s*<\|tool_call_argument_begin\|>\s*(?P<function_arguments>(?:(?!<\|tool_call_begin\|>).)*?)\s*<\|tool_call_end\|>",
    )
    .unwrap_or_else(|e| panic!("the tool-call regex is a constant and compiles: {e}"))
});

/// Kimi's added tokens that vLLM's slow detokenizer surrounds with spaces.
const ADDED_TOKENS: [&str; 7] = [
    THINK_BEGIN,
    THINK_END,
    SECTION_BEGIN,
    SECTION_END,
    CALL_BEGIN,
    ARGUMENT_BEGIN,
    CALL_END,
];

/// What becomes of a call a `length` cut left unfinished.
#[derive(Debug, Clone, Copy, Default)]
struct UnfinishedCall {
    /// It is sent with its arguments so far (a stream sent them before the cut; vLLM 0.33's
    /// parser engine also keeps it unstreamed: arguments stripped, `{}` when there are none).
    kept: bool,
    streamed: bool,
    /// Cut inside its id: vLLM 0.33 sends the id text so far as the call's name, with a minted
    /// id `functions.{id text}:{calls in history}` and arguments `{}` (`""` streamed).
    bogus_when_cut_in_id: bool,
    history_calls: usize,
}

/// Run the reasoning parser, then (with tools declared) the tool parser, as `shape` runs them.
pub fn parse(shape: &ServerShape, text: &str, input: &ForwardInput) -> Parsed {
    let quirks = &shape.quirks;
    let strip = if input.stream && quirks.has::<StreamsArgumentsFirstLine>() {
        ArgumentsSent::FirstLine {
            spaced: input.spaces,
        }
    } else if input.stream && quirks.has::<StripsStreamedArguments>()
        || !input.stream && quirks.has::<StripsArguments>()
    {
        ArgumentsSent::Stripped
    } else {
        ArgumentsSent::Raw
    };
    let unfinished = input.cut.then_some(UnfinishedCall {
        kept: input.stream || !quirks.has::<DropsIncompleteCall>(),
        streamed: input.stream,
        bogus_when_cut_in_id: quirks.has::<BogusCallForCutId>(),
        history_calls: input.history_calls,
    });
    // A cut that leaves the section with no call to send: the shapes measured drop the
    // section's text with it (SGLang 0.5.23, vLLM 0.33.0 and 0.11.2, streamed or not: `content`
    // is the text before the opener; tests/data/server_shapes).
    let dangling = input.cut && quirks.has::<DropsCutSection>();
    let thinking = input.thinking || quirks.has::<IgnoresThinkingOff>();
    if quirks.has::<ReasoningEndsOnlyAtThinkEnd>() && thinking {
        // DeepSeek-R1's parser: reasoning ends at `</think>` only; without it, all is
        // reasoning and the tool parser sees no content.
        let first_token_mode =
            quirks.has::<StreamsFirstTokenAsReasoning>() && input.prompt_closes_reasoning;
        if input.stream && input.tools_declared && first_token_mode {
            return first_token_reasoning(shape, text, input, strip, unfinished, dangling);
        }
        let text = text.strip_prefix(THINK_BEGIN).unwrap_or(text);
        return match text.split_once(THINK_END) {
            Some((reasoning, content)) => {
                let mut reasoning = reasoning;
                if input.stream && input.spaces && quirks.has::<DropsThinkEndDelta>() {
                    // The `</think>` token's delta is ` </think>`: dropped whole.
                    reasoning = reasoning.strip_suffix(' ').unwrap_or(reasoning);
                }
                let mut parsed =
                    after_reasoning(shape, content, input, strip, unfinished, dangling);
                parsed.reasoning = Some(reasoning.to_string());
                parsed
            }
            None => Parsed {
                reasoning: Some(text.to_string()),
                content: None,
                calls: Vec::new(),
                finish_reason: "stop",
                ..Parsed::default()
            },
        };
    }
    let mut parsed = parse_with(
        text,
        thinking,
        input.tools_declared,
        strip,
        unfinished,
        dangling,
    );
    stream_section_text(shape, input, text, &mut parsed);
    parsed
}

/// Where the shape streams the tool section's text outside its calls as content
/// ([`StreamsSectionTextAsContent`]): appended to `parsed.content`.
fn stream_section_text(shape: &ServerShape, input: &ForwardInput, text: &str, parsed: &mut Parsed) {
    let sends = shape.quirks.has::<StreamsSectionTextAsContent>();
    if !(input.stream && input.tools_declared && sends) {
        return;
    }
    let outside = section_text_outside_calls(text);
    if !outside.is_empty() {
        parsed
            .content
            .get_or_insert_with(String::new)
            .push_str(&outside);
    }
}

/// The text after the reasoning, through the tool parser as `shape` runs it (for a stream:
/// with its streaming quirks).
fn after_reasoning(
    shape: &ServerShape,
    content: &str,
    input: &ForwardInput,
    strip: ArgumentsSent,
    unfinished: Option<UnfinishedCall>,
    dangling: bool,
) -> Parsed {
    let mut parsed = parse_with(
        content,
        false,
        input.tools_declared,
        strip,
        unfinished,
        dangling,
    );
    let quirks = &shape.quirks;
    if input.stream && input.spaces && quirks.has::<DropsSectionBeginDelta>() {
        // The opener's delta is ` <|tool_calls_section_begin|>`: suppressed whole.
        if let (Some(opener), Some(before)) = (content.find(SECTION_BEGIN), &mut parsed.content) {
            if before.len() <= opener {
                before.truncate(before.strip_suffix(' ').unwrap_or(before).len());
            }
        }
    }
    stream_section_text(shape, input, content, &mut parsed);
    parsed.content = parsed.content.filter(|c| !c.is_empty());
    if input.stream && input.tools_declared && quirks.has::<LeaksSectionBuffer>() {
        match section_leak(content) {
            Ok(Some((leak, after))) => {
                let mut sent = leak.unwrap_or_default();
                sent.push_str(after);
                parsed.content_after_calls = Some(sent).filter(|s| !s.is_empty());
            }
            Ok(None) => {}
            Err(why) => parsed.unmodelled = Some(why),
        }
    }
    parsed
}

/// The tool section's text outside its calls, the section markers cut out (what SGLang streams
/// of it as content, [`StreamsSectionTextAsContent`]): after the opener,
/// between calls, after the last call's close; nothing of a call the text leaves open.
fn section_text_outside_calls(content: &str) -> String {
    let Some(at) = content.find(SECTION_BEGIN) else {
        return String::new();
    };
    let mut rest = &content[at + SECTION_BEGIN.len()..];
    let mut out = String::new();
    loop {
        let Some(begin) = rest.find(CALL_BEGIN) else {
            out.push_str(&rest.replace(SECTION_END, "").replace(CALL_END, ""));
            return out;
        };
        out.push_str(&rest[..begin].replace(SECTION_END, "").replace(CALL_END, ""));
        match rest[begin..].find(CALL_END) {
            Some(end) => rest = &rest[begin + end + CALL_END.len()..],
            None => return out,
        }
    }
}

/// vLLM 0.11.2 streaming with tools when the prompt already holds `</think>`: the first token's
/// delta is sent as reasoning (nothing for a lone `<think>`/`</think>`), and the tool parser gets
/// everything after it as content, the model's own `</think>` included.
fn first_token_reasoning(
    shape: &ServerShape,
    text: &str,
    input: &ForwardInput,
    strip: ArgumentsSent,
    unfinished: Option<UnfinishedCall>,
    dangling: bool,
) -> Parsed {
    let unknown = |why| Parsed {
        unmodelled: Some(why),
        ..Parsed::default()
    };
    let Some(first) = input.first_token else {
        return unknown("vLLM 0.11.2 streams the first token as reasoning here, and which text it holds is not known");
    };
    let delta = match (first.is_empty(), input.spaces) {
        (true, _) => String::new(),
        (false, true) => format!(" {first}"),
        (false, false) => first.to_string(),
    };
    let Some(rest) = text.strip_prefix(delta.as_str()) else {
        return unknown("the first token is not where the text starts");
    };
    if delta.contains(SECTION_BEGIN) {
        return unknown(
            "vLLM 0.11.2 parses calls by token count when the opener went to reasoning",
        );
    }
    let mut parsed = after_reasoning(shape, rest, input, strip, unfinished, dangling);
    let lone_marker = first == THINK_BEGIN || first == THINK_END;
    parsed.reasoning = (!lone_marker && !delta.is_empty()).then_some(delta);
    parsed
}

fn parse_with(
    text: &str,
    thinking: bool,
    tools_declared: bool,
    strip: ArgumentsSent,
    unfinished: Option<UnfinishedCall>,
    drop_dangling_section: bool,
) -> Parsed {
    let (reasoning, content) = if thinking {
        split_reasoning(text)
    } else {
        (None, Some(text.to_string()))
    };
    let mut parsed = Parsed {
        reasoning,
        content,
        calls: Vec::new(),
        finish_reason: "stop",
        ..Parsed::default()
    };
    if tools_declared {
        if let Some(content) = parsed.content.take() {
            let (before, calls) =
                extract_tool_calls(&content, strip, unfinished, drop_dangling_section);
            parsed.content = before;
            parsed.calls = calls;
        }
    }
    parsed
}

fn split_reasoning(text: &str) -> (Option<String>, Option<String>) {
    let text = text.strip_prefix(THINK_BEGIN).unwrap_or(text);
    match reasoning_end(text) {
        Some((at, skip)) => {
            let content = &text[at + skip..];
            (
                Some(text[..at].to_string()),
                (!content.is_empty()).then(|| content.to_string()),
            )
        }
        None => (Some(text.to_string()), None),
    }
}

/// (content before the tool section or `None` if empty, calls); no section: content unchanged.
fn extract_tool_calls(
    content: &str,
    strip: ArgumentsSent,
    unfinished: Option<UnfinishedCall>,
    drop_dangling_section: bool,
) -> (Option<String>, Vec<ParsedCall>) {
    let start = content
        .find(SECTION_BEGIN)
        .or_else(|| content.find(SECTION_BEGIN_SINGULAR));
    let Some(start) = start else {
        return (Some(content.to_string()), Vec::new());
    };
    let mut calls: Vec<ParsedCall> = CALL_RE
        .captures_iter(content)
        .filter_map(Result::ok)
        .filter_map(|caps| {
            let id = caps.name("tool_call_id")?.as_str().trim().to_string();
            let raw = caps.get(0)?.as_str();
            let arguments = strip.complete(raw_arguments(raw)?);
            Some(call(id, arguments.to_string()))
        })
        .collect();
    if let Some(unfinished) = unfinished {
        // The text after the last complete call: a call the cut left unfinished.
        let tail_from = content
            .rfind(CALL_END)
            .map_or(start, |at| at + CALL_END.len());
        let tail = &content[tail_from..];
        if let Some(begin) = tail.find(CALL_BEGIN) {
            let rest = &tail[begin + CALL_BEGIN.len()..];
            calls.extend(unfinished_call(rest, unfinished, strip));
        }
    }
    if calls.is_empty() && !drop_dangling_section {
        return (Some(content.to_string()), calls);
    }
    let before = &content[..start];
    ((!before.is_empty()).then(|| before.to_string()), calls)
}

/// What the parser sends for a call cut after its `<|tool_call_begin|>` (`rest`: the text
/// after it). vLLM 0.33 (`vllm/parser/kimi_k2.py` on `parser/engine/parser_engine.py`): the id
/// counts once `(?P<id>.+:\d+)` matches the stripped header; until then the header is all the
/// parser has, and `_build_extracted_result` / `_handle_tool_end` send it as the name
/// (stripped) with `make_tool_call_id("kimi_k2", header, history count)` as the id.
fn unfinished_call(
    rest: &str,
    unfinished: UnfinishedCall,
    sent: ArgumentsSent,
) -> Option<ParsedCall> {
    let (header, arguments) = match rest.split_once(ARGUMENT_BEGIN) {
        Some((header, arguments)) => (header, Some(arguments)),
        None => (rest, None),
    };
    let id = header.trim();
    let no_arguments = if unfinished.streamed { "" } else { "{}" };
    match arguments {
        Some(arguments) if unfinished.kept && is_id(id) => {
            let arguments = match sent {
                ArgumentsSent::FirstLine { .. } => sent.so_far(arguments),
                _ if unfinished.streamed => arguments,
                _ => arguments.trim(),
            };
            let arguments = if arguments.is_empty() {
                no_arguments
            } else {
                arguments
            };
            Some(call(id.to_string(), arguments.to_string()))
        }
        None if unfinished.kept && is_id(id) => Some(call(id.to_string(), no_arguments.into())),
        None if unfinished.bogus_when_cut_in_id && !id.is_empty() => Some(ParsedCall {
            id: format!("functions.{header}:{}", unfinished.history_calls),
            name: id.to_string(),
            arguments: no_arguments.to_string(),
        }),
        _ => None,
    }
}

/// How a shape sends each call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgumentsSent {
    /// The text between the markers, as the model wrote it.
    Raw,
    /// … with surrounding whitespace stripped.
    Stripped,
    /// What vLLM 0.11.2's streaming regex matched (`\s*(?P<args>.*)`, no DOTALL) before the
    /// call's end token arrived: leading whitespace skipped, up to the first newline. `spaced`:
    /// the text has a joining space on each side, the closing one in the end token's delta.
    FirstLine { spaced: bool },
}

impl ArgumentsSent {
    /// The arguments of a call that was closed (`raw`: between its two markers).
    fn complete(self, raw: &str) -> &str {
        match self {
            ArgumentsSent::Raw => raw,
            ArgumentsSent::Stripped => raw.trim(),
            ArgumentsSent::FirstLine { spaced } => {
                let raw = if spaced {
                    raw.strip_suffix(' ').unwrap_or(raw)
                } else {
                    raw
                };
                self.so_far(raw)
            }
        }
    }

    /// The arguments streamed of a call the cut left open (`FirstLine` only).
    fn so_far(self, raw: &str) -> &str {
        let raw = match self {
            ArgumentsSent::FirstLine { spaced: true } => raw.strip_prefix(' ').unwrap_or(raw),
            _ => raw,
        };
        let raw = raw.trim_start();
        raw.split('\n').next().unwrap_or(raw)
    }
}

/// The section markers vLLM 0.11.2's streaming parser cuts out of its buffer (both spellings).
const SECTION_MARKERS: [&str; 4] = [
    SECTION_BEGIN,
    SECTION_BEGIN_SINGULAR,
    SECTION_END,
    "<|tool_call_section_end|>",
];

/// vLLM 0.11.2's streamed section leak for the text after `</think>` (as detokenized, spaces
/// and all): `Ok(None)` when no section was closed (a cut inside it sends nothing more);
/// `Ok(Some((leak, after)))` with the buffer sent at the section's end (`None` when it is
/// whitespace only) and the text after the section, streamed as content after it. `Err` when
/// the buffer passed its size limit, where what is kept depends on token boundaries.
fn section_leak(after_think: &str) -> Result<Option<(Option<String>, &str)>, &'static str> {
    let begin = [SECTION_BEGIN, SECTION_BEGIN_SINGULAR]
        .iter()
        .filter_map(|m| after_think.find(m))
        .min();
    let Some(begin) = begin else {
        return Ok(None);
    };
    let end = [SECTION_END, "<|tool_call_section_end|>"]
        .iter()
        .filter_map(|m| after_think[begin..].find(m).map(|at| begin + at + m.len()))
        .min();
    let Some(end) = end else {
        return Ok(None);
    };
    let mut buffer = after_think[..end].to_string();
    for marker in SECTION_MARKERS {
        buffer = buffer.replace(marker, "");
    }
    // The limit is checked on the buffer plus each new delta (a token's text, well under 64
    // characters); below this margin it never fired.
    if buffer.chars().count() + 64 > super::SECTION_LEAK_MAX_CHARS {
        return Err("vLLM 0.11.2 cut its streamed section buffer at token boundaries the text does not show");
    }
    let leak = (!buffer.trim().is_empty()).then_some(buffer);
    Ok(Some((leak, &after_think[end..])))
}

/// The arguments between `<|tool_call_argument_begin|>` and `<|tool_call_end|>` of one matched
/// call, unstripped (the streamed text; non-streamed parsers strip it).
fn raw_arguments(matched: &str) -> Option<&str> {
    let (_, after) = matched.split_once(ARGUMENT_BEGIN)?;
    after.strip_suffix(CALL_END)
}

fn is_id(id: &str) -> bool {
    crate::model::family::kimi::is_native_tool_call_id(id)
}

fn call(id: String, arguments: String) -> ParsedCall {
    let before_colon = id.split(':').next().unwrap_or("");
    let name = before_colon.rsplit('.').next().unwrap_or("").to_string();
    ParsedCall {
        id,
        name,
        arguments,
    }
}

/// The detokenized text as the server sees it with spaces around added tokens: the prompt ends
/// with an added token, so a non-empty answer also starts with the joining space.
pub fn spaced_after_prompt(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!(" {}", space_added_tokens(text))
}

/// vLLM's `spaces_between_special_tokens` artefact (vLLM #33457): the text is cut into runs of
/// ordinary text and added tokens, and the non-empty pieces are joined with one space.
pub fn space_added_tokens(text: &str) -> String {
    let mut pieces: Vec<&str> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = ADDED_TOKENS
            .iter()
            .filter_map(|t| rest.find(t).map(|at| (at, t.len())))
            .min_by_key(|(at, _)| *at);
        match next {
            Some((at, len)) => {
                if at > 0 {
                    pieces.push(&rest[..at]);
                }
                pieces.push(&rest[at..at + len]);
                rest = &rest[at + len..];
            }
            None => {
                pieces.push(rest);
                rest = "";
            }
        }
    }
    pieces.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &str = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:3<|tool_call_argument_begin|>{\"city\": \"Paris\"} <|tool_call_end|><|tool_calls_section_end|>";

    /// A thinking `text`'s parse, arguments stripped, no cut (`tools`: declared).
    fn thinking_stripped(text: &str, tools: bool) -> Parsed {
        parse_with(text, true, tools, ArgumentsSent::Stripped, None, false)
    }

    /// The one-pass search finds what the three `find`s it replaced found, on texts built from
    /// the markers, their prefixes and other `<`s.
    #[test]
    fn reasoning_end_is_the_earliest_of_the_three_finds() {
        let finds = |text: &str| {
            [
                (text.find(THINK_END), THINK_END.len()),
                (text.find(SECTION_BEGIN), 0),
                (text.find(CALL_BEGIN), 0),
            ]
            .into_iter()
            .filter_map(|(at, skip)| at.map(|at| (at, skip)))
            .min_by_key(|&(at, _)| at)
        };
        let parts = [
            "a",
            "<",
            "</",
            "</think",
            THINK_END,
            "<|tool_call",
            SECTION_BEGIN,
            CALL_BEGIN,
            SECTION_END,
            "λ<",
            " ",
            "<<",
        ];
        let mut seed = 7u64;
        for _ in 0..5_000 {
            let mut text = String::new();
            for _ in 0..(seed % 7) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(parts[(seed >> 33) as usize % parts.len()]);
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            assert_eq!(reasoning_end(&text), finds(&text), "{text:?}");
        }
    }

    #[test]
    fn reasoning_ends_at_think_end() {
        let p = thinking_stripped("hmm</think>Four.", false);
        assert_eq!(p.reasoning.as_deref(), Some("hmm"));
        assert_eq!(p.content.as_deref(), Some("Four."));
    }

    #[test]
    fn no_end_marker_means_all_reasoning() {
        let p = thinking_stripped("still thinking", false);
        assert_eq!(p.reasoning.as_deref(), Some("still thinking"));
        assert_eq!(p.content, None);
    }

    #[test]
    fn tool_calls_are_extracted_raw() {
        let p = thinking_stripped(&format!("why</think>Let me look.{CALL}"), true);
        assert_eq!(p.reasoning.as_deref(), Some("why"));
        assert_eq!(p.content.as_deref(), Some("Let me look."));
        assert_eq!(
            p.calls,
            vec![ParsedCall {
                id: "functions.get_weather:3".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Paris\"}".into(),
            }]
        );
    }

    #[test]
    fn a_section_inside_reasoning_ends_it() {
        let p = thinking_stripped(&format!("why{CALL}"), true);
        assert_eq!(p.reasoning.as_deref(), Some("why"));
        assert_eq!(p.content, None);
        assert_eq!(p.calls.len(), 1);
    }

    #[test]
    fn spaces_join_every_added_token() {
        assert_eq!(
            space_added_tokens("<think>ok</think>1"),
            "<think> ok </think> 1"
        );
        assert_eq!(
            space_added_tokens("a</think><|tool_calls_section_begin|>"),
            "a </think> <|tool_calls_section_begin|>"
        );
    }

    #[test]
    fn spaced_calls_still_parse() {
        let p = thinking_stripped(&space_added_tokens(&format!("why</think>{CALL}")), true);
        assert_eq!(p.reasoning.as_deref(), Some("why "));
        assert_eq!(p.content.as_deref(), Some(" "));
        assert_eq!(p.calls[0].id, "functions.get_weather:3");
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
    }

    /// `shape`'s answer to a thinking Kimi `text` cut by `max_tokens`, tools declared.
    fn forward_cut(shape: &ServerShape, text: &str, stream: bool, spaces: bool) -> Parsed {
        let input = ForwardInput {
            text,
            cut: true,
            stream,
            spaces,
            thinking: true,
            tools_declared: true,
            history_calls: 0,
            syntax: crate::server::Syntax::Kimi,
            prompt_closes_reasoning: false,
            first_token: None,
            tools: None,
        };
        crate::server::forward(shape, &input)
    }

    fn vllm_cut(text: &str, stream: bool, spaces: bool) -> Parsed {
        forward_cut(&crate::server::vllm::SHAPE, text, stream, spaces)
    }

    #[test]
    fn sglang_streams_the_section_text_outside_calls_as_content() {
        // SGLang 0.5.23 (`KimiK2Detector.parse_streaming_increment`, tests/data/server_shapes/
        // kimi_k25_sglang.jsonl */cut_after_call_begin/001): cut right after the call opener,
        // the stream shows "Let me check." only; a space in the opener's place would have been
        // drained as normal text ("Let me check. "), while unstreamed both read the same.
        let answer = |text: &str, stream: bool| {
            forward_cut(&crate::server::sglang::SHAPE, text, stream, false).content
        };
        let head = "Reason.</think>Let me check.<|tool_calls_section_begin|>";
        let truth = format!("{head}{CALL_BEGIN}");
        let twin = format!("{head} ");
        assert_eq!(answer(&truth, true).as_deref(), Some("Let me check."));
        assert_eq!(answer(&twin, true).as_deref(), Some("Let me check. "));
        assert_eq!(answer(&twin, false), answer(&truth, false));
        assert_eq!(
            section_text_outside_calls(&format!(
                "a{SECTION_BEGIN}\n{CALL_BEGIN}x{CALL_END} {CALL_BEGIN}y"
            )),
            "\n "
        );
    }

    // The answers below are vLLM 0.33.0's own, in tests/data/server_shapes/kimi_k25.jsonl.
    const OPEN: &str = "The user wants the weather. I should call the tool.</think>Let me check.<|tool_calls_section_begin|><|tool_call_begin|>";

    #[test]
    fn vllm_sends_a_call_cut_in_its_id_as_a_bogus_call() {
        // kimi_k25/vllm-0.33.0/{nonstream,stream}/nospaces/cut_call_id/001
        let text = format!("{OPEN}functions");
        let p = vllm_cut(&text, false, false);
        assert_eq!(
            p.calls,
            vec![ParsedCall {
                id: "functions.functions:0".into(),
                name: "functions".into(),
                arguments: "{}".into(),
            }]
        );
        assert_eq!(p.content.as_deref(), Some("Let me check."));
        assert_eq!(vllm_cut(&text, true, false).calls[0].arguments, "");
        // …/nonstream/spaces/cut_call_id/001: the header keeps the joining space.
        let p = vllm_cut(&text, false, true);
        assert_eq!(p.calls[0].id, "functions. functions:0");
        assert_eq!(p.calls[0].name, "functions");
    }

    #[test]
    fn vllm_keeps_a_cut_call_unstreamed() {
        // kimi_k25/vllm-0.33.0/nonstream/nospaces/cut_arguments/001 and cut_after_arg_begin/001
        let p = vllm_cut(
            &format!(
                "{OPEN}functions.get_weather:0<|tool_call_argument_begin|>{{\"city\": \"Tokyo"
            ),
            false,
            false,
        );
        assert_eq!(p.calls[0].id, "functions.get_weather:0");
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Tokyo");
        let p = vllm_cut(
            &format!("{OPEN}functions.get_weather:0<|tool_call_argument_begin|>"),
            false,
            false,
        );
        assert_eq!(p.calls[0].arguments, "{}");
        // …/nonstream/nospaces/cut_after_call_begin/001: nothing of the call is sent.
        assert!(vllm_cut(OPEN, false, false).calls.is_empty());
    }

    #[test]
    fn vllm_011_drops_a_call_cut_in_its_id() {
        // kimi_k25/vllm-0.11.2/{nonstream,stream}/nospaces/cut_call_id/001: no call, and the
        // section's text is not content either.
        for stream in [false, true] {
            let text = format!("{OPEN}functions");
            let p = forward_cut(&crate::server::vllm::SHAPE_0_11, &text, stream, false);
            assert!(p.calls.is_empty());
            assert_eq!(p.content.as_deref(), Some("Let me check."));
            assert_eq!(p.finish_reason, "length");
        }
    }

    #[test]
    fn a_cut_dangling_section_is_dropped_by_shapes_that_drop_it() {
        let text =
            "why</think>Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get";
        let p = parse_with(text, true, true, ArgumentsSent::Stripped, None, true);
        assert_eq!(p.content.as_deref(), Some("Let me check."));
        assert!(p.calls.is_empty());
        let kept = thinking_stripped(text, true);
        assert!(kept
            .content
            .as_deref()
            .is_some_and(|c| c.ends_with("functions.get")));
    }
}
