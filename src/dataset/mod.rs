//! Datasets in: readers (JSONL, JSON, Parquet), format adapters, and [`prepare`], which turns
//! dataset files into `prompts.jsonl` — one [`Prompt`] per conversation, cut at its last user
//! turn, deduplicated by content id, sharded and limited deterministically.
//!
//! Layout: `reader/` knows containers and yields raw JSON records with their file location;
//! `format/` knows dataset shapes (one file each) and yields OpenAI-shaped conversations;
//! `prepare.rs` runs the two over the inputs and accounts for every record.

pub mod canonical;
pub mod error;
pub mod format;
mod prepare;
pub mod prompt;
pub mod reader;
pub mod samples;

pub use error::{DatasetError, Location, Malformed, Position};
pub use format::Format;
pub use prepare::{
    prepare, prepare_into, read_prompts, PrepareOptions, PrepareReport, Shard, SourceReport,
};
pub use prompt::{Prompt, PromptOptions};
