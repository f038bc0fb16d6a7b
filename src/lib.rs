//! draftgen: token-exact EAGLE-3 draft-model training data from OpenAI-compatible APIs.
//!
//! The modules follow the pipeline (see `docs/ARCHITECTURE.md`):
//! `dataset` → `api`/`engine`/`journal` (generate) → `model` + `reconstruct` (token ids).
//! `cli` is the only module that knows them all; every other module is usable as a library.

pub mod api;
pub mod build;
pub mod cli;
pub mod completion;
pub mod config;
pub mod dataset;
pub mod engine;
pub mod export;
pub mod journal;
pub mod json;
pub mod model;
pub mod probe;
pub mod pyjson;
pub mod reconstruct;
pub mod server;
pub mod sim;
pub mod verify;
