//! Any other OpenAI-compatible server, shape unknown. Forward (the simulator's `raw` flavour) it
//! answers like a server without parsers; backward nothing is assumed about it, so the
//! reconstruction accepts any of the shapes it reads and checks only `usage`.

use super::{CallIds, CutInCallId, ReasoningField, ServerShape, Streaming};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::Generic,
    version: "",
    known: false,
    parses: false,
    reasoning_field: ReasoningField::Reasoning,
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
    reasoning_ends_at_tool_section: true,
    honours_thinking_off: true,
    cut_reports_tool_calls: false,
    drops_cut_section: false,
    calls_have_index: false,
    reasoning_tokens_through_close: false,
    prompt_tokens_are_render: false,
    streaming: Streaming::AS_PARSED,
};
