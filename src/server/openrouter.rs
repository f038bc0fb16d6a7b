//! OpenRouter in front of a Kimi provider (FACTS.md §C): the upstream's Kimi parsers split the
//! text, then OpenRouter reshapes it — `message.reasoning` plus `reasoning_details`, empty
//! reasoning left out, tool-call ids replaced by `call_<24 hex>`, `content` `""` when empty,
//! `finish_reason` normalized. What the upstream strips is the upstream's business; taken here
//! as the raw parser's (arguments stripped, nothing else).

use super::{CallIds, CutInCallId, ReasoningField, ServerShape, Streaming};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::OpenRouter,
    version: "",
    known: true,
    parses: true,
    reasoning_field: ReasoningField::Reasoning,
    reasoning_details: true,
    drops_empty_reasoning: true,
    empty_content_null: false,
    whitespace_content_null: false,
    strips_reasoning_trailing_whitespace: false,
    strips_arguments: true,
    strips_streamed_arguments: true,
    coerces_arguments: false,
    call_ids: CallIds::Minted,
    cut_in_call_id: CutInCallId::Dropped,
    drops_incomplete_call: true,
    spaces_default: false,
    finish_tool_calls: true,
    reasoning_ends_at_tool_section: true,
    honours_thinking_off: true,
    cut_reports_tool_calls: false,
    drops_cut_section: true,
    calls_have_index: true,
    reasoning_tokens_through_close: false,
    prompt_tokens_are_render: false,
    streaming: Streaming::AS_PARSED,
};
