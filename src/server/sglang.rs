//! SGLang serving Kimi (`--reasoning-parser kimi_k2|kimi_k25 --tool-call-parser kimi_k2`), as
//! measured on SGLang 0.5.23's own `kimik2_detector.py`, `reasoning_parser.py` and
//! `serving_chat.py` (tests/data/server_shapes/kimi_k25_sglang.jsonl): reasoning verbatim in `message.reasoning_content`;
//! `content` `""`, never `null`; tool calls carry `index`, and their ids are re-synthesized as
//! `functions.NAME:(calls in history + i)` — the model's own id text is lost; non-streamed
//! arguments are stripped by the parser's regex and an incomplete (cut) call is dropped; no
//! spaces around special tokens.

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
