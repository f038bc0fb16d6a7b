//! [`SimConfig`]: everything that shapes the simulator's answers, pacing and faults.
//!
//! The defaults answer quickly and never fail, so a test only sets what it is about.

use std::path::PathBuf;
use std::time::Duration;

use super::faults::FaultRates;
use super::flavor::Flavor;
use crate::server::ServerShape;

/// Simulated response time: `base` before the first byte plus `per_token` per completion token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub base: Duration,
    pub per_token: Duration,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            base: Duration::from_millis(1),
            per_token: Duration::ZERO,
        }
    }
}

/// Dollar prices per token, for `usage.cost` and the key endpoint's `usage`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    pub prompt: f64,
    pub completion: f64,
}

impl Default for Prices {
    /// Kimi K2.5 on OpenRouter at the time of writing: about $0.60 / $2.50 per million tokens.
    fn default() -> Self {
        Prices {
            prompt: 0.60e-6,
            completion: 2.50e-6,
        }
    }
}

/// How often the simulated model does what (each 0..1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Behaviour {
    /// With tools declared (and `tool_choice` not `none`): chance the answer calls tools.
    pub tool_call_rate: f64,
    /// Given tool calls: chance of two or three parallel calls instead of one.
    pub parallel_rate: f64,
    /// Given tool calls: chance the tool section opens inside reasoning, without `</think>`.
    pub section_in_reasoning_rate: f64,
    /// Given tool calls: chance of some content before the tool section.
    pub content_with_tools_rate: f64,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            tool_call_rate: 0.7,
            parallel_rate: 0.25,
            section_in_reasoning_rate: 0.05,
            content_with_tools_rate: 0.3,
        }
    }
}

/// The simulator's settings.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The server shape answering, by its simulator name (`--flavor`).
    pub flavor: Flavor,
    /// Every answer and fault is a pure function of this seed and the request.
    pub seed: u64,
    /// Model directory whose tokenizer counts tokens and produces `token_ids`; without one,
    /// counts are whitespace-separated pieces and no token ids are returned.
    pub model_dir: Option<PathBuf>,
    /// The model family profile for `model_dir` (`None`: detected from the directory).
    pub profile: Option<String>,
    /// A chat template replacing `model_dir`'s (prompt counts and ids render with it).
    pub chat_template: Option<PathBuf>,
    /// The model name reported when a request names none (and listed by `/v1/models`).
    pub model_name: String,
    pub faults: FaultRates,
    pub latency: Latency,
    /// Characters of text per streamed delta, where the flavour does not stream one token per
    /// delta (vLLM and SGLang do, with a tokenizer loaded).
    pub stream_chunk_chars: usize,
    /// vLLM's `spaces_between_special_tokens` artefact: one space joined around every added token,
    /// for requests that do not say (a request's `spaces_between_special_tokens` wins, as on vLLM).
    pub spaces_around_special_tokens: bool,
    pub prices: Prices,
    /// `GET /api/v1/key` `limit`; once spent, chat requests get 402. `None`: unlimited.
    pub credit_limit: Option<f64>,
    /// Answer 401 to requests without an `Authorization: Bearer …` header.
    pub require_key: bool,
    /// `Retry-After` seconds sent with 429 (and 503) faults.
    pub retry_after_secs: u64,
    /// How long a hang fault stalls (longer than any sane client timeout).
    pub hang: Duration,
    /// The `provider` name reported by the openrouter flavour.
    pub provider_name: String,
    pub behaviour: Behaviour,
    /// A provider's finite capacity (see [`super::capacity`]); `None`: unlimited.
    pub capacity: Option<super::capacity::CapacityConfig>,
    /// Answer from recorded responses instead of writing them (see [`super::replay`]).
    pub replay: Option<std::sync::Arc<super::replay::Replay>>,
    /// Named providers, each with its own server shape and tool-call defects
    /// ([`super::providers`]); empty: one provider, [`SimConfig::server_shape`] and
    /// `provider_name`.
    pub providers: Vec<super::providers::NamedProvider>,
    /// Answering as OpenRouter, refuse a model id other than `model_name` (OpenRouter's 400
    /// `"X is not a valid model ID"`); off, any id is served (tests that name no real model).
    /// `draftgen sim` turns it on unless `--any-model`.
    pub refuses_unknown_models: bool,
    /// The server shape answering in place of `flavor`'s (one defined outside the crate, say
    /// with a quirk of its own; its kind picks the JSON it answers in). Named providers keep
    /// their own shapes.
    pub shape: Option<&'static ServerShape>,
}

impl SimConfig {
    /// The server shape answering when no named provider does: `shape`, else `flavor`'s.
    pub fn server_shape(&self) -> &'static ServerShape {
        self.shape.unwrap_or_else(|| self.flavor.shape())
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            flavor: Flavor::OpenRouter,
            seed: 0,
            model_dir: None,
            profile: None,
            chat_template: None,
            model_name: "moonshotai/kimi-k2.5".to_string(),
            faults: FaultRates::default(),
            latency: Latency::default(),
            stream_chunk_chars: 24,
            spaces_around_special_tokens: false,
            prices: Prices::default(),
            credit_limit: None,
            require_key: false,
            retry_after_secs: 1,
            hang: Duration::from_secs(600),
            provider_name: "DraftgenSim".to_string(),
            behaviour: Behaviour::default(),
            capacity: None,
            replay: None,
            providers: Vec::new(),
            refuses_unknown_models: false,
            shape: None,
        }
    }
}
