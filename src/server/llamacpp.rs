//! llama.cpp's `llama-server` without a tool-call parser for the family: the whole sampled
//! text in `content` (markers included, the stop token not), `finish_reason` `stop`/`length`;
//! `return_tokens` + `verbose` give the server's own ids in `__verbose.tokens`.

use super::{CallIds, CutInCallId, ReasoningField, ServerShape};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::LlamaCpp,
    version: "",
    known: true,
    parses: false,
    reasoning_field: ReasoningField::ReasoningContent,
    reasoning_details: false,
    drops_empty_reasoning: false,
    empty_content_null: false,
    whitespace_content_null: false,
    strips_reasoning_trailing_whitespace: false,
    strips_arguments: false,
    strips_streamed_arguments: false,
    coerces_arguments: false,
    call_ids: CallIds::Verbatim,
    cut_in_call_id: CutInCallId::Dropped,
    drops_incomplete_call: false,
    spaces_default: false,
    finish_tool_calls: false,
    calls_have_index: false,
};
