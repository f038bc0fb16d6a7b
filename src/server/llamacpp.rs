//! llama.cpp's `llama-server` without a tool-call parser for the family: the whole sampled
//! text in `content` (markers included, the stop token not), `finish_reason` `stop`/`length`;
//! `return_tokens` + `verbose` give the server's own ids in `__verbose.tokens`.

use super::{ReasoningField, ServerShape};
use crate::api::ServerKind;

/// Like an unknown server (no parsers, nothing stripped), but known: what it does is measured
/// (tests/real_server.rs).
pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::LlamaCpp,
    known: true,
    reasoning_field: ReasoningField::ReasoningContent,
    ..super::generic::SHAPE
};
