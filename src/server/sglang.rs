//! SGLang serving Kimi (`--reasoning-parser kimi_k2|kimi_k25 --tool-call-parser kimi_k2`), as
//! measured on SGLang 0.5.23's own `kimik2_detector.py`, `reasoning_parser.py` and
//! `serving_chat.py` (tests/data/server_shapes/kimi_k25_sglang.jsonl): reasoning verbatim in `message.reasoning_content`;
//! `content` `""`, never `null`; tool calls carry `index`, and their ids are re-synthesized as
//! `functions.NAME:(calls in history + i)` — the model's own id text is lost; non-streamed
//! arguments are stripped by the parser's regex and an incomplete (cut) call is dropped; no
//! spaces around special tokens.

//!
//! The same shape serves the families whose SGLang detectors were measured on their own
//! (`deepseekv31` + `deepseek-v3`, `qwen3_coder`, `qwen25` + `qwen3`, `gpt-oss` + `gpt-oss`,
//! `llama3`: tests/data/<family>/sglang_shapes.jsonl, tests/sglang_families.rs): the family's
//! parser, then what these detectors do otherwise than vLLM's — not streamed, `deepseekv31` and
//! `qwen25` strip the content before the calls ([`StripsContentBeforeCalls`]), `qwen3_coder`
//! keeps it as written ([`KeepsContentBeforeCalls`]), `llama3` finds a call only at the start
//! ([`ParsesOnlyALeadingCall`]); `usage.reasoning_tokens` ends at harmony's `<|end|>`
//! ([`CountsReasoningThroughClose`]). Ids are `call_` + random hex for these families. What
//! is not modelled (their streamed tool calls, re-serialized arguments) makes the answer
//! `inconsistent` or `lossy`, never exact.
use super::quirk::Quirks;
use super::quirks::{
    CompletesEmptyLastArguments, CountsReasoningThroughClose, DropsCutSection, DropsIncompleteCall,
    EmptyContentAsString, FinishToolCalls, IndexesCalls, KeepsContentBeforeCalls,
    ParsesOnlyALeadingCall, ResynthesizesCallIds, StreamsSectionTextAsContent, StreamsTokenDeltas,
    StripsArguments, StripsContentBeforeCalls,
};
use super::{ReasoningField, ServerShape, Versions};
use crate::api::ServerKind;

/// SGLang 0.5.23 (tests/data/server_shapes/kimi_k25_sglang.jsonl).
pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::Sglang,
    version: "0.5",
    known: true,
    parses: true,
    reasoning_field: ReasoningField::ReasoningContent,
    reasoning_details: false,
    versions: Versions::Newest,
    quirks: Quirks::new(&[
        &StripsContentBeforeCalls,
        &KeepsContentBeforeCalls,
        &ParsesOnlyALeadingCall,
        &EmptyContentAsString,
        &ResynthesizesCallIds,
        &StripsArguments,
        &DropsIncompleteCall,
        &DropsCutSection,
        &IndexesCalls,
        &CountsReasoningThroughClose,
        &StreamsSectionTextAsContent,
        &CompletesEmptyLastArguments,
        &StreamsTokenDeltas,
        &FinishToolCalls,
    ]),
};
