//! The run directory: manifest, append-only crash-safe journal of [`Record`]s, resume index.

pub mod record;

pub use record::{ErrorClass, Record, Status};
