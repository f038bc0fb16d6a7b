//! Reading back vLLM 0.11.2's streamed section leak ([`LeaksSectionBuffer`]).
//!
//! At `<|tool_calls_section_end|>` its streaming `kimi_k2` parser sends its whole buffer as
//! `content`: what the model wrote before the section (already streamed once) and every call's
//! raw text, markers and all, with the section markers cut out. So a streamed 0.11 answer's
//! content is `P + P + J + calls`, where `P` is the content as streamed and `J` the joining
//! spaces the suppressed deltas left in the buffer (with spaces around added tokens: the one
//! before the section opener and the one before the first `<|tool_call_begin|>`). The leak is a
//! gift: it holds each call's arguments exactly as the model wrote them, where the streamed
//! ones stop at the first newline. The forward check ([`crate::server::forward`]) then sends
//! every candidate through the same leak and compares.
//!
//! [`LeaksSectionBuffer`]: crate::server::quirks::LeaksSectionBuffer

use crate::completion::{Arguments, Completion};
use crate::server::kimi::{ARGUMENT_BEGIN, CALL_BEGIN, CALL_END};

/// One reading of the leak: the answer as the model's text has it.
#[derive(Debug, Clone)]
pub(super) struct Leaked {
    pub completion: Completion,
    /// The buffer had passed its limit and what is left of it misses the starts of this many
    /// calls (the first ones): they are known from their streamed first lines only.
    pub streamed_only: usize,
}

/// Every reading of the content as a leak of these calls: the whole buffer ([`doubled`]), or,
/// when that does not fit, each place its cut may have left the content streamed before it
/// ([`trimmed`]). Empty when the content holds no leak (the forward check then decides).
pub(super) fn read_back(completion: &Completion, spaces: bool) -> Vec<Leaked> {
    if let Some(whole) = doubled(completion, spaces) {
        return vec![Leaked {
            completion: whole,
            streamed_only: 0,
        }];
    }
    trimmed(completion, spaces)
}

/// The whole buffer leaked: content once, each call's raw arguments from the leak. `None` when
/// the content is not `P + P + J + calls`.
fn doubled(completion: &Completion, spaces: bool) -> Option<Completion> {
    let content = completion.content.as_deref()?;
    let at = content.find(CALL_BEGIN)?;
    let (head, body) = content.split_at(at);
    let joining = if spaces { "  " } else { "" };
    let doubled = head.strip_suffix(joining)?;
    let half = doubled.len() / 2;
    if !doubled.is_char_boundary(half) || doubled[..half] != doubled[half..] {
        return None;
    }
    let calls = whole_calls(body, spaces)?;
    if calls.len() != completion.tool_calls.len() {
        return None;
    }
    let mut model = completion.clone();
    model.content = Some(doubled[..half].to_string());
    for (call, (id, raw)) in model.tool_calls.iter_mut().zip(calls) {
        call.id = Some(id.to_string());
        call.arguments = Arguments::Raw(raw.to_string());
    }
    Some(model)
}

/// Each call's id text and raw arguments in `body` (which starts at a `<|tool_call_begin|>`;
/// with spaces: a joining space each side of both). `None` when a call is not whole.
fn whole_calls(body: &str, spaces: bool) -> Option<Vec<(&str, &str)>> {
    body.split(CALL_BEGIN)
        .skip(1)
        .map(|call| {
            let (id, after) = call.split_once(ARGUMENT_BEGIN)?;
            let id = if spaces { id.trim() } else { id };
            after.split_once(CALL_END).map(|(args, _)| (id, args))
        })
        .collect()
}

/// The fewest and most characters the buffer sends after a cut: the 512 it keeps (less the
/// section markers cut out of them later) plus the deltas that arrive before the next cut
/// (at most 1024 in all, and one delta over).
const TRIMMED_LEAK_CHARS: std::ops::RangeInclusive<usize> = 400..=1200;

/// How many splits are tried when the leak lies inside the calls' text.
const SPLITS_INSIDE_CALLS: usize = 4;

/// The readings of a leak whose buffer was cut (vLLM 0.11.2 keeps the last 512 characters
/// whenever it passes 1024): the content is `P + L`, `L` the end of `P + J + calls`. The calls
/// whole in `L` give their raw text; the others are written from their streamed first lines.
/// Every split of the content where that holds is a reading.
fn trimmed(completion: &Completion, spaces: bool) -> Vec<Leaked> {
    let (Some(content), false) = (
        completion.content.as_deref(),
        completion.tool_calls.is_empty(),
    ) else {
        return Vec::new();
    };
    let Some(buffer) = Buffer::of(completion, content, spaces) else {
        return Vec::new();
    };
    leak_starts(content, buffer.first_marker, &buffer.after)
        .into_iter()
        .map(|k| buffer.reading(completion, &content[..k], spaces))
        .collect()
}

/// What the section buffer held after the content, as far as a cut leak shows it.
struct Buffer<'a> {
    /// Where the content's first call marker is: the leak starts at or before it.
    first_marker: usize,
    /// The calls whole in the leak (the last ones): each one's id text and raw arguments.
    in_leak: Vec<(&'a str, &'a str)>,
    /// How many calls (the first ones) are known from their streamed first lines only.
    streamed_only: usize,
    /// The buffer's text after the content: the opener's joining space, each call's text.
    after: String,
}

impl<'a> Buffer<'a> {
    /// `None` where the content is no cut leak of these calls.
    fn of(completion: &Completion, content: &'a str, spaces: bool) -> Option<Buffer<'a>> {
        let first_marker = [CALL_BEGIN, ARGUMENT_BEGIN, CALL_END]
            .iter()
            .filter_map(|m| content.find(m))
            .min()?;
        // The calls whole in the leak are the last ones (a call the cut fell inside shows only
        // its end, before the first call opener).
        let first_whole = content.find(CALL_BEGIN);
        let in_leak = match first_whole {
            Some(at) => whole_calls(&content[at..], spaces)?,
            None => Vec::new(),
        };
        let streamed_only = completion.tool_calls.len().checked_sub(in_leak.len())?;
        let pad = if spaces { " " } else { "" };
        let mut after = pad.to_string();
        for call in &completion.tool_calls[..streamed_only] {
            let id = call.id.as_deref().unwrap_or_default().trim();
            let Arguments::Raw(arguments) = &call.arguments else {
                return None;
            };
            after.push_str(&format!(
                "{pad}{CALL_BEGIN}{pad}{id}{pad}{ARGUMENT_BEGIN}{pad}{arguments}{pad}{CALL_END}"
            ));
        }
        after.push_str(pad);
        if let Some(at) = first_whole {
            after.push_str(&content[at..]);
        }
        Some(Buffer {
            first_marker,
            in_leak,
            streamed_only,
            after,
        })
    }

    /// The answer as the model's text has it when the content streamed before the leak is
    /// `before`.
    fn reading(&self, completion: &Completion, before: &str, spaces: bool) -> Leaked {
        let streamed_only = self.streamed_only;
        let mut model = completion.clone();
        model.content = Some(before.to_string());
        for (call, (id, raw)) in model.tool_calls[streamed_only..]
            .iter_mut()
            .zip(&self.in_leak)
        {
            call.id = Some(id.to_string());
            call.arguments = Arguments::Raw(raw.to_string());
        }
        if spaces {
            // As the leak has them: a joining space each side (the read-back removes them).
            for call in &mut model.tool_calls[..streamed_only] {
                if let Arguments::Raw(arguments) = &mut call.arguments {
                    *arguments = format!(" {arguments} ");
                }
            }
        }
        Leaked {
            completion: model,
            streamed_only,
        }
    }
}

/// The byte offsets in `content` where a cut leak ending in `after` can start: at or before the
/// first call marker, leaving a leak of a length the buffer can send.
fn leak_starts(content: &str, first_marker: usize, after: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let total = content.chars().count();
    // Splits that leave the leak inside the calls' text, counted from the first (the longest
    // leak): every later split fits too, and the content before a cut is unlikely to end like
    // the calls' text before the leak for more than a few characters.
    let mut inside_calls = 0;
    for (chars_before, (k, _)) in content.char_indices().enumerate() {
        let leak_chars = total - chars_before;
        if k > first_marker || (k > 0 && !TRIMMED_LEAK_CHARS.contains(&leak_chars)) {
            continue;
        }
        let (before, leak) = content.split_at(k);
        // A leak inside the calls' text: the first few splits that fit are readings (a longer
        // coincidence leaves none right: the forward check then flags the answer).
        let fits = if leak.len() <= after.len() {
            let fits = after.ends_with(leak) && inside_calls < SPLITS_INSIDE_CALLS;
            inside_calls += usize::from(fits);
            fits
        } else {
            leak.ends_with(after) && before.ends_with(&leak[..leak.len() - after.len()])
        };
        if fits {
            starts.push(k);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn streamed(content: &str, arguments: &str) -> Completion {
        Completion::from_response(
            &json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": content, "tool_calls": [
                {"id": "functions.search:0", "type": "function",
                 "function": {"name": "search", "arguments": arguments}}]}}]}),
        )
        .unwrap()
    }

    #[test]
    fn the_leak_gives_the_content_once_and_the_raw_arguments() {
        // kimi_k25/vllm-0.11.2/stream/nospaces/nested_args/004: the streamed arguments stop at
        // the first newline; the leak has them whole.
        let got = doubled(
            &streamed(
                "Sure.Sure.<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\n  \"q\": 1\n}<|tool_call_end|>",
                "{",
            ),
            false,
        )
        .unwrap();
        assert_eq!(got.content.as_deref(), Some("Sure."));
        assert_eq!(
            got.tool_calls[0].arguments,
            Arguments::Raw("{\n  \"q\": 1\n}".into())
        );
        // …/stream/spaces/parallel_2_calls/001: two joining spaces before the first call.
        let spaced = doubled(
            &streamed(
                " Sure. Sure.  <|tool_call_begin|> functions.search:0 <|tool_call_argument_begin|> {} <|tool_call_end|> ",
                "{}",
            ),
            true,
        )
        .unwrap();
        assert_eq!(spaced.content.as_deref(), Some(" Sure."));
        assert_eq!(
            spaced.tool_calls[0].arguments,
            Arguments::Raw(" {} ".into())
        );
        // Content that is not a leak of these calls is left to the check.
        assert!(doubled(&streamed("Sure.", "{}"), false).is_none());
        assert!(doubled(
            &streamed(
                "Sure.<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{}<|tool_call_end|>",
                "{}"
            ),
            false
        )
        .is_none());
    }
}
