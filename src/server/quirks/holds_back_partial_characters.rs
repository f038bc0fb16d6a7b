//! The incremental detokenizer waits for a character's last byte, so a `length` cut inside a
//! character leaves that character's tokens unsent (`Look:` for ids ending `Look: ` + a partial
//! `好`: tests/data/server_shapes, vLLM 0.33.0 and 0.11.2, Kimi and DeepSeek-V3). Without it the
//! partial bytes are sent as U+FFFD (SGLang). The simulator's parsers read the text it leaves
//! (`sim::flavor::detokenized`).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct HoldsBackPartialCharacters;

impl Quirk for HoldsBackPartialCharacters {
    fn name(&self) -> &'static str {
        "holds_back_partial_characters"
    }
}
