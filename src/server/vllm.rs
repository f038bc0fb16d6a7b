//! vLLM serving Kimi with `--reasoning-parser kimi_k2 --tool-call-parser kimi_k2`
//! (measured on vLLM 0.33.0's own parser and assembly code: tests/data/server_shapes/kimi_k25.jsonl).
//!
//! 0.33: reasoning in `message.reasoning`, its trailing whitespace stripped in a non-streamed
//! answer; whitespace-only content before the tool calls → `null`; ids verbatim; arguments raw
//! but stripped when not streamed, coerced to the schema and re-serialized when a value's type
//! does not match it; a call cut before its `<|tool_call_end|>` is still sent (arguments so far,
//! stripped, `{}` when none), and one cut inside its id becomes a bogus call named after the id
//! text so far (`functions` → name `functions`, id `functions.functions:0`: vLLM 0.33's
//! `make_tool_call_id("kimi_k2", header, history count)`; `kimi::unfinished_call`); `finish_reason` `tool_calls`
//! when a finished answer has calls; one space around every added token by default
//! (`spaces_between_special_tokens=True` with Kimi's slow tokenizer, vLLM #33457).
//!
//! The 0.11–0.2x line (the one K2-Vendor-Verifier recommends), as vLLM 0.11.2's own code answers
//! (tests/data/server_shapes/kimi_k25_vllm011.jsonl): `--reasoning-parser kimi_k2` is
//! `DeepSeekR1ReasoningParser` — reasoning ends at `</think>` only (a tool section without it
//! stays in the reasoning, no call parsed) and `thinking=false` does not switch it off; the
//! message carries `reasoning_content` (and the same text in `reasoning`); nothing is stripped
//! from the reasoning; whitespace-only content is `null` once the section opener was seen (calls
//! or not); `finish_reason` is `tool_calls` whenever calls were parsed, also for a `length` cut;
//! a call the cut left unfinished is dropped unstreamed, and one cut inside its id is dropped
//! streamed too (no bogus call); no schema coercion; a non-streamed
//! answer's tool calls get fresh random ids (`chatcmpl-tool-…`: the model's id is lost; the
//! streamed ones carry it). Its streams are their own code ([`Vllm011Stepwise`]): at
//! `<|tool_calls_section_end|>` the streaming `kimi_k2` parser sends its whole buffer — the
//! content again and every call's raw text — as `content`; the `</think>` and opener deltas are
//! dropped with their joining spaces; streamed arguments stop at the first newline; with
//! `</think>` anywhere in the prompt the first token is streamed as reasoning and the rest goes
//! through the tool parser.

use super::quirks::{
    BogusCallForCutId, CoercesArguments, CutReportsToolCalls, DropsCutSection, DropsIncompleteCall,
    DropsSectionBeginDelta, DropsThinkEndDelta, FinishToolCalls, HoldsBackPartialCharacters,
    IgnoresThinkingOff, LeaksSectionBuffer, MintsCallIds, NullsWhitespaceContent,
    ReasoningEndsOnlyAtThinkEnd, SpacesAroundAddedTokens, StreamsArgumentsFirstLine,
    StreamsFirstTokenAsReasoning, StreamsTokenDeltas, StreamsVerbatimCallIds,
    StreamsWhitespaceContent, StripsArguments, StripsReasoningTrailingWhitespace, Vllm011Stepwise,
};
use super::{ReasoningField, ServerShape, Versions};
use crate::api::ServerKind;

use super::quirk::Quirks;

/// vLLM 0.33.0 (tests/data/server_shapes/kimi_k25_vllm.jsonl). Its parser engine keeps a cut
/// call, not streamed too (`_build_extracted_result`): no `DropsIncompleteCall`.
pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::Vllm,
    version: "0.33",
    known: true,
    parses: true,
    reasoning_field: ReasoningField::Reasoning,
    reasoning_details: false,
    versions: Versions::Newest,
    quirks: Quirks::new(&[
        &StripsReasoningTrailingWhitespace,
        &NullsWhitespaceContent,
        &StripsArguments,
        &CoercesArguments,
        &BogusCallForCutId,
        &SpacesAroundAddedTokens,
        &DropsCutSection,
        &HoldsBackPartialCharacters,
        &StreamsTokenDeltas,
        &FinishToolCalls,
    ]),
};

/// vLLM 0.11.2 (tests/data/server_shapes/kimi_k25_vllm011.jsonl): 0.33 less what that line
/// added, more its own parsers' ways and its streaming code. It sends nothing of a call cut
/// inside its id (cut_call_id): no `BogusCallForCutId`.
pub const SHAPE_0_11: ServerShape = ServerShape {
    version: "0.11-0.2x",
    versions: Versions::Minors {
        major: 0,
        first: 11,
        end: 30,
    },
    reasoning_field: ReasoningField::Both,
    quirks: Quirks::on(&SHAPE.quirks)
        .minus(&[
            &StripsReasoningTrailingWhitespace,
            &CoercesArguments,
            &BogusCallForCutId,
        ])
        .plus(&[
            &DropsIncompleteCall,
            &MintsCallIds,
            &ReasoningEndsOnlyAtThinkEnd,
            &IgnoresThinkingOff,
            &CutReportsToolCalls,
            &DropsThinkEndDelta,
            &DropsSectionBeginDelta,
            &StreamsArgumentsFirstLine,
            &LeaksSectionBuffer,
            &StreamsWhitespaceContent,
            &StreamsVerbatimCallIds,
            &StreamsFirstTokenAsReasoning,
            &Vllm011Stepwise,
        ]),
    ..SHAPE
};

/// vLLM 0.33's parsers without the server's own edits (no stripping, no coercion, no spaces):
/// exactly what the model's text says (the tool-call audit's round trip).
pub const PARSER_ONLY: ServerShape = ServerShape {
    quirks: Quirks::on(&SHAPE.quirks).minus(&[
        &StripsArguments,
        &CoercesArguments,
        &SpacesAroundAddedTokens,
    ]),
    ..SHAPE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_the_previous_one_less_and_more() {
        assert!(SHAPE.quirks.has::<StripsReasoningTrailingWhitespace>());
        assert!(!SHAPE_0_11.quirks.has::<StripsReasoningTrailingWhitespace>());
        assert!(!SHAPE_0_11.quirks.has::<CoercesArguments>());
        let names = SHAPE_0_11.quirks.names();
        assert!(!names.contains(&"strips_reasoning_trailing_whitespace"));
        assert!(names.contains(&"leaks_section_buffer"));
    }
}
