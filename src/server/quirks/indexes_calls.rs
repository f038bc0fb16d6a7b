//! Tool calls carry `index` (SGLang, OpenRouter).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct IndexesCalls;

impl Quirk for IndexesCalls {
    fn name(&self) -> &'static str {
        "indexes_calls"
    }
}
