//! Dataset readers (JSONL, JSON, Parquet) and format adapters, producing [`Prompt`]s.

pub mod prompt;

pub use prompt::Prompt;
