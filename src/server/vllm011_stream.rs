//! vLLM 0.11.2's streamed Kimi answer, step by step: what its chat-completion stream sends for a
//! known token stream, ported from its own code (paths under `vllm/` of the 0.11.2 wheel):
//!
//! - the slow tokenizer's incremental detokenizer (`transformers_utils/detokenizer_utils.py`,
//!   `detokenize_incrementally`): one delta per token; with `spaces_between_special_tokens` the
//!   pieces (runs of ordinary tokens, each added token) are joined with one space, so a token
//!   that starts a piece brings the joining space; a delta that ends in a partial UTF-8 character
//!   is held back until the character completes; the end-of-turn token that stops the answer is
//!   not detokenized (its step sends `""`);
//! - `--reasoning-parser kimi_k2`, which 0.11.2 registers as `DeepSeekR1ReasoningParser`
//!   (`reasoning/deepseek_r1_reasoning_parser.py`, `basic_parsers.py`);
//! - the glue of `OpenAIServingChat.chat_completion_stream_generator`
//!   (`entrypoints/openai/serving_chat.py`): the reasoning parser until `</think>` (or from the
//!   first token when the prompt already holds `</think>`), then the tool parser, first fed
//!   everything since the reasoning ended; the finishing step's check for "unstreamed" argument
//!   text (`json.dumps` of the arguments string); `finish_reason` `tool_calls` once a call was
//!   streamed;
//! - `KimiK2ToolParser.extract_tool_calls_streaming`
//!   (`entrypoints/openai/tool_parsers/kimi_k2_tool_parser.py`): the section buffer (cut to its
//!   last 512 characters whenever it passes 1024, sent whole as content at the section's end),
//!   the forced exit after 8192 characters in the section, calls found by counting call tokens,
//!   arguments by a regex without DOTALL.
//!
//! Hand-written because it is the server's own state machine: no crate has it. Only the token
//! stream decides what is sent — the buffer's cuts fall at delta boundaries, which is why the
//! text-level model of [`super::kimi`] cannot follow a long section — so this needs each token's
//! bytes ([`Token`]). One token per engine step, as vLLM runs without speculative decoding.

use std::ops::ControlFlow;
use std::sync::LazyLock;

use regex::Regex;

use super::{Parsed, ParsedCall};
use crate::model::family::kimi::{
    ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_BEGIN_SINGULAR, SECTION_END,
    SECTION_END_SINGULAR, THINK_BEGIN, THINK_END,
};

/// `KimiK2ToolParser.buffer_max_size`: past it, the buffer keeps its last half.
const BUFFER_MAX_CHARS: usize = 1024;
/// `KimiK2ToolParser.max_section_chars`: past it, the parser leaves the section.
const MAX_SECTION_CHARS: usize = 8192;

/// One token of the answer: its bytes and whether it is an added token (a marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub bytes: Vec<u8>,
    pub special: bool,
}

/// What the parsers test a token's id for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Id {
    ThinkBegin,
    ThinkEnd,
    SectionBegin,
    SectionEnd,
    CallBegin,
    CallEnd,
    Other,
}

/// A list of token ids as the parsers read it: only its length and how often each marker is in
/// it (`in`, `.count()`), kept as counts so a long answer is not copied at every step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ids {
    len: usize,
    counts: [usize; 7],
}

impl Ids {
    fn one(id: Id) -> Ids {
        Ids::default().with(id)
    }

    fn with(mut self, id: Id) -> Ids {
        self.len += 1;
        self.counts[id as usize] += 1;
        self
    }

    fn contains(&self, id: Id) -> bool {
        self.counts[id as usize] > 0
    }

    fn count(&self, id: Id) -> usize {
        self.counts[id as usize]
    }
}

/// The text so far (`current_text`), with where its last call opener ends: the parser reads
/// `current_text.split(CALL_BEGIN)[-1]` at every step of a call.
#[derive(Debug, Clone, Default)]
struct Text {
    text: String,
    after_last_call_begin: Option<usize>,
}

impl Text {
    fn new(text: String) -> Text {
        let after_last_call_begin = text.rfind(CALL_BEGIN).map(|at| at + CALL_BEGIN.len());
        Text {
            text,
            after_last_call_begin,
        }
    }

    fn push(&mut self, delta: &str) {
        if let Some(at) = delta.rfind(CALL_BEGIN) {
            self.after_last_call_begin = Some(self.text.len() + at + CALL_BEGIN.len());
        }
        self.text.push_str(delta);
    }

    /// `text.split(CALL_BEGIN)[-1]`
    fn last_call(&self) -> &str {
        &self.text[self.after_last_call_begin.unwrap_or(0)..]
    }
}

impl Id {
    fn of(token: &Token) -> Id {
        if !token.special {
            return Id::Other;
        }
        match token.bytes.as_slice() {
            b if b == THINK_BEGIN.as_bytes() => Id::ThinkBegin,
            b if b == THINK_END.as_bytes() => Id::ThinkEnd,
            b if b == SECTION_BEGIN.as_bytes() || b == SECTION_BEGIN_SINGULAR.as_bytes() => {
                Id::SectionBegin
            }
            b if b == SECTION_END.as_bytes() || b == SECTION_END_SINGULAR.as_bytes() => {
                Id::SectionEnd
            }
            b if b == CALL_BEGIN.as_bytes() => Id::CallBegin,
            b if b == CALL_END.as_bytes() => Id::CallEnd,
            _ => Id::Other,
        }
    }
}

/// How the answer was asked for and ended.
#[derive(Debug, Clone, Copy)]
pub struct StreamRequest {
    /// `spaces_between_special_tokens` (vLLM's default: true).
    pub spaces: bool,
    /// Tools were declared (`tool_choice` auto): the tool parser runs.
    pub tools: bool,
    /// The prompt's ids hold `</think>` (`is_reasoning_end(prompt_token_ids)`).
    pub prompt_closes_reasoning: bool,
    /// The answer ended with its end-of-turn token (false: `max_tokens` cut it after the last
    /// token given).
    pub stopped: bool,
}

/// The detokenizer's delta for each step (the last one `""` for a stopping end-of-turn token).
fn deltas(tokens: &[Token], spaces: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut pending: Vec<u8> = Vec::new();
    // The prompt ends with an added token (`<|im_middle|>`, `<think>`, `</think>`).
    let mut previous_special = true;
    for token in tokens {
        if spaces && (token.special || previous_special) {
            pending.push(b' ');
        }
        previous_special = token.special;
        pending.extend_from_slice(&token.bytes);
        let text = String::from_utf8_lossy(&pending);
        if text.ends_with('\u{FFFD}') {
            // A potential unfinished byte sequence: held back.
            out.push(String::new());
        } else {
            out.push(text.into_owned());
            pending.clear();
        }
    }
    out
}

/// A message the stream sends for one step.
#[derive(Debug, Clone, Default, PartialEq)]
struct Delta {
    reasoning: Option<String>,
    content: Option<String>,
    call: Option<CallDelta>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct CallDelta {
    index: usize,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

impl Delta {
    fn content(text: impl Into<String>) -> Delta {
        Delta {
            content: Some(text.into()),
            ..Delta::default()
        }
    }

    fn reasoning(text: impl Into<String>) -> Delta {
        Delta {
            reasoning: Some(text.into()),
            ..Delta::default()
        }
    }

    fn arguments(index: usize, arguments: String) -> Delta {
        Delta {
            call: Some(CallDelta {
                index,
                arguments: Some(arguments),
                ..CallDelta::default()
            }),
            ..Delta::default()
        }
    }
}

/// The answer vLLM 0.11.2 streams for `tokens` (the end-of-turn token excluded), assembled as a
/// client assembles its chunks: reasoning and content concatenated (content sent after the first
/// tool-call delta in [`Parsed::content_after_calls`]), each call's id and name from its first
/// delta and its arguments concatenated.
pub fn stream(tokens: &[Token], request: &StreamRequest) -> Parsed {
    let mut steps: Vec<(Id, String)> = tokens
        .iter()
        .map(Id::of)
        .zip(deltas(tokens, request.spaces))
        .collect();
    if request.stopped {
        // The end-of-turn token's step: its text is not detokenized.
        steps.push((Id::Other, String::new()));
    }
    let mut glue = Glue::new(*request);
    let mut out = Parsed {
        finish_reason: "stop",
        call_ids_checked: true,
        ..Parsed::default()
    };
    let mut calls: Vec<ParsedCall> = Vec::new();
    let last = steps.len().saturating_sub(1);
    for (n, (id, text)) in steps.into_iter().enumerate() {
        let finishing = n == last;
        let Some(delta) = glue.step(id, text, finishing) else {
            continue;
        };
        if let Some(r) = delta.reasoning {
            out.reasoning.get_or_insert_with(String::new).push_str(&r);
        }
        if let Some(c) = delta.content {
            let field = if calls.is_empty() {
                &mut out.content
            } else {
                &mut out.content_after_calls
            };
            field.get_or_insert_with(String::new).push_str(&c);
        }
        if let Some(call) = delta.call {
            while calls.len() <= call.index {
                calls.push(ParsedCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let slot = &mut calls[call.index];
            if let Some(id) = call.id {
                slot.id = id;
            }
            if let Some(name) = call.name {
                slot.name.push_str(&name);
            }
            if let Some(arguments) = call.arguments {
                slot.arguments.push_str(&arguments);
            }
        }
    }
    out.calls = calls;
    out.finish_reason = if glue.tools_called() {
        "tool_calls"
    } else if request.stopped {
        "stop"
    } else {
        "length"
    };
    out
}

/// `chat_completion_stream_generator`'s per-choice state for `tool_choice_auto` with a
/// reasoning parser (or the reasoning parser alone without tools).
struct Glue {
    request: StreamRequest,
    reasoning_end: bool,
    added_content_delta: bool,
    /// `previous_texts[i]` and `all_previous_token_ids[i]`.
    previous_text: Text,
    previous_ids: Ids,
    tools_streamed: bool,
    tool: ToolParser,
}

impl Glue {
    fn new(request: StreamRequest) -> Glue {
        Glue {
            request,
            reasoning_end: false,
            added_content_delta: false,
            previous_text: Text::default(),
            previous_ids: Ids::default(),
            tools_streamed: false,
            tool: ToolParser::default(),
        }
    }

    fn tools_called(&self) -> bool {
        !self.tool.prev_tool_call_arr.is_empty() || self.tools_streamed
    }

    fn step(&mut self, id: Id, delta_text: String, finishing: bool) -> Option<Delta> {
        let previous_ids = self.previous_ids;
        let mut current_text = std::mem::take(&mut self.previous_text);
        current_text.push(&delta_text);
        let mut current_ids = previous_ids.with(id);
        let output_ids = Ids::one(id);
        let message = if !self.request.tools {
            // "when only reasoning"
            r1_reasoning(&delta_text, previous_ids, output_ids)
        } else if !self.reasoning_end {
            let mut message = r1_reasoning(&delta_text, previous_ids, output_ids);
            let mut ends = |current_ids: &mut Ids, ids: Ids| {
                self.reasoning_end = true;
                *current_ids = ids;
                current_text = match message.as_mut().and_then(|m| m.content.take()) {
                    Some(content) if !content.is_empty() => Text::new(content),
                    _ => Text::default(),
                };
            };
            if self.request.prompt_closes_reasoning {
                ends(&mut current_ids, output_ids);
            }
            if output_ids.contains(Id::ThinkEnd) {
                // `extract_content_ids`: one token per step, so nothing after the end token.
                ends(&mut current_ids, Ids::default());
            }
            message
        } else {
            let (mut previous_ids_seen, mut delta_text, mut delta_ids) =
                (previous_ids, delta_text, output_ids);
            if !self.added_content_delta {
                // "First time to tool call, add the remaining text and token ids to delta from
                // previous."
                self.added_content_delta = true;
                previous_ids_seen = Ids::default();
                delta_text = current_text.text.clone();
                delta_ids = current_ids;
            }
            let message = self.tool.stream(
                &current_text,
                delta_text,
                previous_ids_seen,
                current_ids,
                delta_ids,
            );
            if message.as_ref().is_some_and(|m| m.call.is_some()) {
                self.tools_streamed = true;
            }
            message
        };
        self.previous_text = current_text;
        self.previous_ids = current_ids;
        let message = match message {
            Some(m) => m,
            None if finishing => Delta::default(),
            None => return None,
        };
        if !finishing || !self.request.tools {
            return Some(message);
        }
        Some(self.unstreamed_arguments(message))
    }

    /// The finishing step: a delta with call arguments is replaced by what "was not streamed
    /// yet", measured against `json.dumps` of the arguments string (`ensure_ascii=False`).
    fn unstreamed_arguments(&self, message: Delta) -> Delta {
        let Some(latest) = message.call.as_ref().and_then(|c| c.arguments.as_ref()) else {
            return message;
        };
        let tool = &self.tool;
        let index = tool.prev_tool_call_arr.len().saturating_sub(1);
        let arguments = tool
            .prev_tool_call_arr
            .get(index)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.arguments.clone());
        let expected = match arguments {
            Some(text) => crate::pyjson::dumps_json(
                &serde_json::Value::String(text),
                &crate::pyjson::DumpOptions::default(),
            ),
            None => "{}".to_string(),
        };
        let mut actual = tool
            .streamed_args_for_tool
            .get(index)
            .cloned()
            .unwrap_or_default();
        let latest = latest.chars().count();
        if latest > 0 {
            let keep = actual.chars().count().saturating_sub(latest);
            actual = actual.chars().take(keep).collect();
        }
        Delta::arguments(index, expected.replacen(actual.as_str(), "", 1))
    }
}

/// `DeepSeekR1ReasoningParser.extract_reasoning_streaming` for a one-token step.
fn r1_reasoning(delta_text: &str, previous_ids: Ids, delta_ids: Ids) -> Option<Delta> {
    let start_here = delta_ids.contains(Id::ThinkBegin);
    let end_here = delta_ids.contains(Id::ThinkEnd);
    if delta_ids.len == 1 && (start_here || end_here) {
        return None;
    }
    let start_before = previous_ids.contains(Id::ThinkBegin);
    let end_before = previous_ids.contains(Id::ThinkEnd);
    let split = || {
        let at = delta_text.find(THINK_END).unwrap_or(0);
        let content = &delta_text[(at + THINK_END.len()).min(delta_text.len())..];
        Delta {
            reasoning: Some(delta_text[..at].to_string()),
            content: (!content.is_empty()).then(|| content.to_string()),
            call: None,
        }
    };
    if start_before {
        return Some(if end_here {
            split()
        } else if end_before {
            Delta::content(delta_text)
        } else {
            Delta::reasoning(delta_text)
        });
    }
    if start_here {
        // With one token per step the start token arrives alone (skipped above).
        return Some(Delta::reasoning(delta_text));
    }
    // No start token: DeepSeek-R1's override (the model may not write `<think>`).
    Some(if end_here {
        split()
    } else if end_before {
        Delta::content(delta_text)
    } else {
        Delta::reasoning(delta_text)
    })
}

/// A call as the tool parser last parsed it (`prev_tool_call_arr` entries; `{}` is all `None`).
#[derive(Debug, Clone, Default, PartialEq)]
struct CallSoFar {
    id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

/// `KimiK2ToolParser`'s streaming state.
#[derive(Default)]
struct ToolParser {
    current_tool_name_sent: bool,
    prev_tool_call_arr: Vec<Option<CallSoFar>>,
    current_tool_id: i64,
    streamed_args_for_tool: Vec<String>,
    in_tool_section: bool,
    token_buffer: String,
    section_char_count: usize,
    started: bool,
}

/// `stream_tool_call_portion_regex` (up to the argument opener, see [`portion_match`]) and
/// `stream_tool_call_name_regex`, anchored as `re.match`.
static PORTION_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<id>.+:\d+)\s*<\|tool_call_argument_begin\|>")
        .unwrap_or_else(|e| panic!("a constant regex compiles: {e}"))
});
static NAME_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<id>.+:\d+)\s*").unwrap_or_else(|e| panic!("a constant regex compiles: {e}"))
});

/// `stream_tool_call_portion_regex.match(portion)`: the id and the arguments' first line. The
/// regex runs on the portion up to its argument opener only (the id must stand before it); the
/// arguments are `\s*(.*)` after it, read directly: a long argument would make the regex scan
/// it at every step.
fn portion_match(portion: &str) -> Option<(&str, &str)> {
    let at = portion.find(ARGUMENT_BEGIN)? + ARGUMENT_BEGIN.len();
    let caps = PORTION_RE.captures(&portion[..at])?;
    let id = caps.name("id")?.as_str();
    let rest = portion[at..].trim_start();
    let arguments = rest.split('\n').next().unwrap_or_default();
    Some((id, arguments))
}

/// `_check_and_strip_markers`: the text without section markers, and which were found.
fn strip_markers(text: &str) -> (String, bool, bool) {
    let mut cleaned = text.to_string();
    let mut found_begin = false;
    let mut found_end = false;
    for marker in [SECTION_BEGIN, SECTION_BEGIN_SINGULAR] {
        if cleaned.contains(marker) {
            cleaned = cleaned.replace(marker, "");
            found_begin = true;
        }
    }
    for marker in [SECTION_END, SECTION_END_SINGULAR] {
        if cleaned.contains(marker) {
            cleaned = cleaned.replace(marker, "");
            found_end = true;
        }
    }
    (cleaned, found_begin, found_end)
}

/// `function_id.split(":")[0].split(".")[-1]`
fn name_of(id: &str) -> String {
    let before = id.split(':').next().unwrap_or_default();
    before.rsplit('.').next().unwrap_or_default().to_string()
}

/// The last `n` characters of `text` (Python's `text[-n:]`).
fn last_chars(text: &str, n: usize) -> String {
    let total = text.chars().count();
    text.chars().skip(total.saturating_sub(n)).collect()
}

impl ToolParser {
    fn reset_section(&mut self) {
        self.in_tool_section = false;
        self.token_buffer.clear();
        self.section_char_count = 0;
    }

    /// `extract_tool_calls_streaming`: what one step sends, in the parser's phases (the section
    /// buffer, the call counts, the call's portion).
    fn stream(
        &mut self,
        current_text: &Text,
        delta_text: String,
        previous_ids: Ids,
        current_ids: Ids,
        delta_ids: Ids,
    ) -> Option<Delta> {
        if !self.started {
            self.started = true;
            self.current_tool_id = -1;
        }
        let (delta_text, deferred) = match self.buffer_step(delta_text, current_ids, delta_ids) {
            ControlFlow::Break(delta) => return delta,
            ControlFlow::Continue(step) => step,
        };
        let counts = CallCounts::of(previous_ids, current_ids);
        let portions = self.portions(current_text, delta_text, counts, delta_ids, deferred);
        let (portion, text_portion, delta_text) = match portions {
            ControlFlow::Break(delta) => return delta,
            ControlFlow::Continue(step) => step,
        };
        self.call_step(portion, text_portion, delta_text, deferred)
    }

    /// The section buffer and its markers: the step's delta text without section markers and
    /// whether the section ends after this step (`Break`: what the step sends).
    fn buffer_step(
        &mut self,
        delta_text: String,
        current_ids: Ids,
        delta_ids: Ids,
    ) -> ControlFlow<Option<Delta>, (String, bool)> {
        let mut deferred_section_exit = false;
        self.token_buffer.push_str(&delta_text);
        if self.token_buffer.chars().count() > BUFFER_MAX_CHARS {
            self.token_buffer = last_chars(&self.token_buffer, BUFFER_MAX_CHARS / 2);
        }
        let (buffered, found_begin, found_end) = strip_markers(&self.token_buffer);
        if found_begin && !self.in_tool_section {
            self.in_tool_section = true;
            self.token_buffer = buffered.clone();
            self.section_char_count = 0;
        }
        if found_end && self.in_tool_section {
            if delta_ids.contains(Id::CallEnd) {
                deferred_section_exit = true;
                self.token_buffer = buffered;
            } else {
                self.reset_section();
                return ControlFlow::Break(Some(Delta::content(non_blank(buffered))));
            }
        } else {
            self.token_buffer = buffered;
        }
        let has_section_token = current_ids.contains(Id::SectionBegin);
        if !has_section_token && !self.in_tool_section {
            return ControlFlow::Break(Some(Delta::content(delta_text)));
        }
        let (delta_text, _, _) = strip_markers(&delta_text);
        if self.in_tool_section {
            self.section_char_count += delta_text.chars().count();
            if self.section_char_count > MAX_SECTION_CHARS {
                self.reset_section();
                return ControlFlow::Break(Some(Delta::content(non_blank(delta_text))));
            }
        }
        ControlFlow::Continue((delta_text, deferred_section_exit))
    }

    /// `if deferred_section_exit and self.in_tool_section: self.reset_section()`.
    fn exit_deferred(&mut self, deferred: bool) {
        if deferred && self.in_tool_section {
            self.reset_section();
        }
    }

    /// From the call counts: the portion of the current call to parse, the text after a call's
    /// close, and the delta text as the rest reads it (`Break`: what the step sends).
    fn portions(
        &mut self,
        current_text: &Text,
        mut delta_text: String,
        counts: CallCounts,
        delta_ids: Ids,
        deferred: bool,
    ) -> ControlFlow<Option<Delta>, Portions> {
        let CallCounts {
            prev_start,
            prev_end,
            cur_start,
            cur_end,
        } = counts;
        let mut portion: Option<String> = None;
        let mut text_portion: Option<String> = None;
        if cur_start == cur_end && prev_end == cur_end && !delta_text.contains(CALL_END) {
            if self.in_tool_section && cur_start == 0 {
                return ControlFlow::Break(Some(Delta::content("")));
            }
            return ControlFlow::Break(Some(Delta::content(delta_text)));
        }
        if delta_text.contains(CALL_END) {
            let (call, before_end) = closed_call(current_text, &delta_text);
            portion = Some(call);
            text_portion = Some(before_end.trim_start().to_string());
            delta_text = before_end;
        }
        if cur_start > cur_end && cur_start > prev_start {
            portion = if delta_ids.len > 1 {
                Some(current_text.last_call().to_string())
            } else {
                None
            };
            text_portion = None;
            self.current_tool_id += 1;
            self.current_tool_name_sent = false;
            self.streamed_args_for_tool.push(String::new());
        } else if cur_start > cur_end && cur_start == prev_start {
            portion = Some(current_text.last_call().to_string());
            text_portion = None;
        } else if cur_start == cur_end && cur_end >= prev_end {
            self.closed_call_arguments(&delta_text, deferred)?;
        } else {
            let in_section = self.in_tool_section;
            self.exit_deferred(deferred);
            if in_section {
                return ControlFlow::Break(Some(Delta::content("")));
            }
            let text = delta_text.replace(CALL_BEGIN, "").replace(CALL_END, "");
            return ControlFlow::Break(Some(Delta::content(text)));
        }
        ControlFlow::Continue((portion, text_portion, delta_text))
    }

    /// A call closed in this step: the rest of its arguments, where the parser had some
    /// (`Break`: what the step sends; `Continue`: the call's portion is parsed on).
    fn closed_call_arguments(
        &mut self,
        delta_text: &str,
        deferred: bool,
    ) -> ControlFlow<Option<Delta>> {
        let Some(current) = usize::try_from(self.current_tool_id)
            .ok()
            .filter(|_| !self.prev_tool_call_arr.is_empty())
        else {
            self.exit_deferred(deferred);
            return ControlFlow::Break(None);
        };
        // Python's `prev_tool_call_arr[current_tool_id]`: out of range raises, and the
        // parser's `except` sends nothing for this step.
        let Some(entry) = self.prev_tool_call_arr.get(current) else {
            return ControlFlow::Break(None);
        };
        let diff = entry
            .as_ref()
            .and_then(|c| c.arguments.clone())
            .filter(|d| !d.is_empty());
        if diff.is_none() {
            return ControlFlow::Continue(());
        }
        let Some(end_loc) = delta_text.rfind("\"}") else {
            self.exit_deferred(deferred);
            return ControlFlow::Break(None);
        };
        let diff = format!("{}\"}}", &delta_text[..end_loc]);
        if let Some(streamed) = self.streamed_args_for_tool.get_mut(current) {
            streamed.push_str(&diff);
        }
        self.exit_deferred(deferred);
        ControlFlow::Break(Some(Delta::arguments(current, diff)))
    }

    /// The current call's portion parsed: its name first, then its arguments as they grow.
    fn call_step(
        &mut self,
        portion: Option<String>,
        text_portion: Option<String>,
        delta_text: String,
        deferred: bool,
    ) -> Option<Delta> {
        let current_call = match portion.as_deref().filter(|p| !p.is_empty()) {
            Some(portion) => parse_portion(portion)?,
            None => CallSoFar::default(),
        };
        let index = usize::try_from(self.current_tool_id).unwrap_or(0);
        if !self.current_tool_name_sent {
            let name = current_call.name.clone().filter(|n| !n.is_empty())?;
            self.current_tool_name_sent = true;
            return Some(Delta {
                call: Some(CallDelta {
                    index,
                    id: current_call.id.clone(),
                    name: Some(name),
                    arguments: None,
                }),
                ..Delta::default()
            });
        }
        if portion.is_none() {
            return text_portion.map(|_| Delta::content(delta_text));
        }
        let delta = self.arguments_delta(index, &current_call);
        let slot = Some(current_call);
        if self.prev_tool_call_arr.len().checked_sub(1) == Some(index) {
            self.prev_tool_call_arr[index] = slot;
        } else {
            self.prev_tool_call_arr.push(slot);
        }
        self.exit_deferred(deferred);
        delta
    }

    /// What the call's arguments grew by since the parser last saw them.
    fn arguments_delta(&mut self, index: usize, current_call: &CallSoFar) -> Option<Delta> {
        if self.prev_tool_call_arr.len() <= index {
            self.prev_tool_call_arr.push(Some(CallSoFar::default()));
        }
        let prev_arguments = self
            .prev_tool_call_arr
            .get(index)
            .and_then(|c| c.as_ref())
            .and_then(|c| c.arguments.clone())
            .filter(|a| !a.is_empty());
        let cur_arguments = current_call.arguments.clone().filter(|a| !a.is_empty());
        match (cur_arguments, prev_arguments) {
            (Some(cur), None) => {
                if let Some(streamed) = self.streamed_args_for_tool.get_mut(index) {
                    *streamed = cur.clone();
                }
                Some(Delta::arguments(index, cur))
            }
            (Some(cur), Some(prev))
                if cur != prev && cur.len() > prev.len() && cur.starts_with(&prev) =>
            {
                let more = cur[prev.len()..].to_string();
                if let Some(streamed) = self.streamed_args_for_tool.get_mut(index) {
                    *streamed = cur.clone();
                }
                Some(Delta::arguments(index, more))
            }
            _ => None,
        }
    }
}

/// What [`ToolParser::portions`] hands on: the current call's portion, the text after a call's
/// close, the delta text.
type Portions = (Option<String>, Option<String>, String);

/// The call-marker counts before and after one step.
#[derive(Debug, Clone, Copy)]
struct CallCounts {
    prev_start: usize,
    prev_end: usize,
    cur_start: usize,
    cur_end: usize,
}

impl CallCounts {
    fn of(previous_ids: Ids, current_ids: Ids) -> CallCounts {
        CallCounts {
            prev_start: previous_ids.count(Id::CallBegin),
            prev_end: previous_ids.count(Id::CallEnd),
            cur_start: current_ids.count(Id::CallBegin),
            cur_end: current_ids.count(Id::CallEnd),
        }
    }
}

/// A delta holding `<|tool_call_end|>`: the closed call's text (`(current_text +
/// delta_text).split(CALL_BEGIN)[-1]` up to its close, right-stripped) and the delta text
/// before the close (right-stripped).
fn closed_call(current_text: &Text, delta_text: &str) -> (String, String) {
    let last_call = match delta_text.rfind(CALL_BEGIN) {
        Some(at) => delta_text[at + CALL_BEGIN.len()..].to_string(),
        None => format!("{}{delta_text}", current_text.last_call()),
    };
    let call = last_call.split(CALL_END).next().unwrap_or_default();
    let before_end = delta_text
        .split(CALL_END)
        .next()
        .unwrap_or_default()
        .trim_end();
    (call.trim_end().to_string(), before_end.to_string())
}

/// The call a portion shows: its id and name, and its arguments' first line (empty when the
/// argument opener has not come); `None` when the portion is no call yet.
fn parse_portion(portion: &str) -> Option<CallSoFar> {
    if let Some((id, arguments)) = portion_match(portion) {
        return Some(CallSoFar {
            name: Some(name_of(id)),
            id: Some(id.to_string()),
            arguments: Some(arguments.to_string()),
        });
    }
    let caps = NAME_RE.captures(portion)?;
    let id = caps.name("id").map_or("", |m| m.as_str()).to_string();
    Some(CallSoFar {
        name: Some(name_of(&id)),
        id: Some(id),
        arguments: Some(String::new()),
    })
}

/// What the parser sends of a text that leaves the section: nothing when it is whitespace only.
fn non_blank(text: String) -> String {
    if text.trim().is_empty() {
        String::new()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &[u8], special: bool) -> Token {
        Token {
            bytes: text.to_vec(),
            special,
        }
    }

    #[test]
    fn deltas_join_added_tokens_and_hold_back_partial_characters() {
        // As kimi_k25/vllm-0.11.2/stream/spaces/random_mix/003 streams `tool. </think>  …`: the
        // first delta after the prompt's added token and every delta beside an added token
        // bring the joining space; `é` split over two tokens arrives whole with the second.
        let tokens = [
            token(b"ok", false),
            token(b"</think>", true),
            token(&[0xC3], false),
            token(&[0xA9], false),
            token(b"<|tool_calls_section_begin|>", true),
        ];
        assert_eq!(
            deltas(&tokens, true),
            [
                " ok",
                " </think>",
                "",
                " \u{e9}",
                " <|tool_calls_section_begin|>"
            ]
        );
        assert_eq!(
            deltas(&tokens, false),
            [
                "ok",
                "</think>",
                "",
                "\u{e9}",
                "<|tool_calls_section_begin|>"
            ]
        );
    }

    #[test]
    fn a_lone_reasoning_end_is_not_streamed() {
        // kimi_k25/vllm-0.11.2/stream/*/plain_reasoning_*: the `</think>` delta is dropped.
        let tokens = [
            token(b"Hm", false),
            token(b"</think>", true),
            token(b"Hi", false),
        ];
        let parsed = stream(
            &tokens,
            &StreamRequest {
                spaces: false,
                tools: false,
                prompt_closes_reasoning: false,
                stopped: true,
            },
        );
        assert_eq!(parsed.reasoning.as_deref(), Some("Hm"));
        assert_eq!(parsed.content.as_deref(), Some("Hi"));
        assert_eq!(parsed.finish_reason, "stop");
    }
}
