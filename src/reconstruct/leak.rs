//! Reading back vLLM 0.11.2's streamed section leak ([`Streaming::leaks_section_buffer`]).
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
//! [`Streaming::leaks_section_buffer`]: crate::server::Streaming::leaks_section_buffer

use crate::completion::{Arguments, Completion};
use crate::server::kimi::{ARGUMENT_BEGIN, CALL_BEGIN, CALL_END};

/// The answer as the model's text has it: content once, each call's raw arguments from the
/// leak. `None` when the content does not hold a leak of these calls (the check then decides).
pub(super) fn read_back(completion: &Completion, spaces: bool) -> Option<Completion> {
    let content = completion.content.as_deref()?;
    let at = content.find(CALL_BEGIN)?;
    let (head, body) = content.split_at(at);
    let joining = if spaces { "  " } else { "" };
    let doubled = head.strip_suffix(joining)?;
    let half = doubled.len() / 2;
    if !doubled.is_char_boundary(half) || doubled[..half] != doubled[half..] {
        return None;
    }
    // Each call's id text and raw arguments (with spaces: a joining space each side of both).
    let calls: Vec<(&str, &str)> = body
        .split(CALL_BEGIN)
        .skip(1)
        .map(|call| {
            let (id, after) = call.split_once(ARGUMENT_BEGIN)?;
            let id = if spaces { id.trim() } else { id };
            after.split_once(CALL_END).map(|(args, _)| (id, args))
        })
        .collect::<Option<_>>()?;
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
        let got = read_back(
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
        let spaced = read_back(
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
        assert!(read_back(&streamed("Sure.", "{}"), false).is_none());
        assert!(read_back(
            &streamed(
                "Sure.<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{}<|tool_call_end|>",
                "{}"
            ),
            false
        )
        .is_none());
    }
}
