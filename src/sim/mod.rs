//! A built-in OpenAI-compatible server with provider flavours and fault injection, for tests,
//! benchmarks and the demo: draftgen's client, engine and reconstruction are exercised against
//! something that behaves like OpenRouter, vLLM, SGLang, llama.cpp or a parser-less server,
//! without paying anyone.
//!
//! The simulated model writes a native token stream in its family's syntax ([`answer`]: as the
//! loaded family's profile writes a turn, Kimi K2.5's without a model) that is a pure function of
//! (seed, request), so a retried or resumed request gets the same answer; a server shape
//! (`crate::server`, named on the command line by a [`Flavor`]) turns it into that server's
//! response, dressed as the shape's kind's JSON by [`flavor`]; [`faults`] decides, per attempt,
//! whether the answer is replaced by a failure. Named [`providers`] stand behind one endpoint as
//! upstreams do behind OpenRouter, each with its shape and [`conventions`] (how its stack counts
//! and shapes an answer), picked by OpenRouter's [`routing`]. [`server`] ties them to HTTP.
//! [`Simulator::answer_with`] answers a request with given token ids instead of the model's own
//! through the same path (how `tests/sim_vs_servers.rs` holds every flavour to the servers' own
//! answers). [`family_model`] finds any family's tokenizer files, so the simulator (and the demo)
//! can serve every family (`tests/sim_families.rs`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), draftgen::sim::SimError> {
//! use draftgen::sim::{spawn, Flavor, SimConfig};
//! let sim = spawn(SimConfig { flavor: Flavor::Vllm, seed: 7, ..SimConfig::default() }).await?;
//! let base_url = sim.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url;
//! sim.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod answer;
pub mod arguments;
mod attempts;
pub mod capacity;
pub mod config;
pub mod conventions;
pub mod counters;
pub mod endpoints;
pub mod family_model;
pub mod faults;
pub mod flavor;
pub mod prompt;
pub mod providers;
pub mod replay;
pub mod request;
pub mod routing;
pub mod seed;
pub mod server;
pub mod syntax;
pub mod tokens;
pub mod words;

pub use capacity::{CapacityConfig, CapacitySnapshot};
pub use config::{Behaviour, Latency, Prices, SimConfig};
pub use counters::{CounterSnapshot, Counters};
pub use faults::{FaultKind, FaultRates, ToolDefect, ToolDefectRates};
pub use flavor::Flavor;
pub use providers::NamedProvider;
pub use replay::{Replay, ReplayError};
pub use server::{serve, spawn, Answered, SimHandle, Simulator};

/// Why the simulator could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("sim: cannot load the tokenizer from {dir}: {source} (pass a model directory with tiktoken.model or tokenizer.json, or omit --model)")]
    Model {
        dir: String,
        #[source]
        source: crate::model::ModelError,
    },
    #[error("sim: cannot bind the listening socket: {0} (is the port free?)")]
    Bind(#[source] std::io::Error),
    #[error("sim: server error: {0}")]
    Serve(#[source] std::io::Error),
    #[error("sim: server task failed: {0}")]
    Task(String),
}
