//! What a server shape sends for a [`Turn`] (`server::forward`, streamed token by token where
//! the shape models its stream so), with the call ids a server mints filled in and the named
//! provider's tool-call defects injected: the fields every dressing then writes as JSON.

use super::turn::Turn;
use crate::server::quirks::{HoldsBackPartialCharacters, SpacesAroundAddedTokens, Vllm011Stepwise};
use crate::server::{self, kimi, ForwardInput, Parsed, ServerShape};
use crate::sim::faults::ToolDefect;

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
            call.id = tool_call_id(turn, i);
        }
    }
    turn.conventions.calls(&mut parsed, &turn.minted_call_ids);
    inject_defects(&mut parsed, turn);
    parsed
}

/// The random id a vLLM-style server gives call `index` (`chatcmpl-tool-…`), from the turn's
/// minted ones so that a retry reports the same.
pub fn tool_call_id(turn: &Turn, index: usize) -> String {
    turn.minted_call_ids
        .get(index)
        .map(|id| format!("chatcmpl-tool-{}", id.trim_start_matches("call_")))
        .unwrap_or_else(|| format!("chatcmpl-tool-{index:024}"))
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
