//! SGLang serving Kimi (`--reasoning-parser kimi_k2|kimi_k25 --tool-call-parser kimi_k2`), as
//! measured on SGLang 0.5.23's own `kimik2_detector.py`, `reasoning_parser.py` and
//! `serving_chat.py` (FACTS.md §B3, §B6): reasoning verbatim in `message.reasoning_content`;
//! `content` `""`, never `null`; tool calls carry `index`, and their ids are re-synthesized as
//! `functions.NAME:(calls in history + i)` — the model's own id text is lost; non-streamed
//! arguments are stripped by the parser's regex and an incomplete (cut) call is dropped; no
//! spaces around special tokens.

use super::{CallIds, CutInCallId, ReasoningField, ServerShape, Streaming};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::Sglang,
    version: "0.5",
    known: true,
    parses: true,
    reasoning_field: ReasoningField::ReasoningContent,
    reasoning_details: false,
    drops_empty_reasoning: false,
    empty_content_null: false,
    whitespace_content_null: false,
    strips_reasoning_trailing_whitespace: false,
    strips_arguments: true,
    strips_streamed_arguments: false,
    coerces_arguments: false,
    call_ids: CallIds::Resynthesized,
    cut_in_call_id: CutInCallId::Dropped,
    drops_incomplete_call: true,
    spaces_default: false,
    finish_tool_calls: true,
    reasoning_ends_at_tool_section: true,
    honours_thinking_off: true,
    cut_reports_tool_calls: false,
    drops_cut_section: true,
    calls_have_index: true,
    reasoning_tokens_through_close: true,
    prompt_tokens_are_render: false,
    streaming: Streaming {
        section_text_as_content: true,
        completes_empty_last_arguments: true,
        ..Streaming::AS_PARSED
    },
};
