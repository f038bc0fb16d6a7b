//! Any other OpenAI-compatible server, shape unknown. Forward (the simulator's `raw` flavour) it
//! answers like a server without parsers; backward nothing is assumed about it, so the
//! reconstruction accepts any of the shapes it reads and checks only `usage`.

use super::quirk::Quirks;
use super::quirks::EmptyContentAsString;
use super::{ReasoningField, ServerShape, Versions};
use crate::api::ServerKind;

pub const SHAPE: ServerShape = ServerShape {
    kind: ServerKind::Generic,
    version: "",
    known: false,
    parses: false,
    reasoning_field: ReasoningField::Reasoning,
    reasoning_details: false,
    versions: Versions::Newest,
    quirks: Quirks::new(&[&EmptyContentAsString]),
};
