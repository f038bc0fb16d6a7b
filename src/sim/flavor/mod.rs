//! Flavours: how one kind of server turns the model's sampled text into its API response.
//!
//! What the server does to the text — which field, what is stripped, how ids are made — is not
//! decided here but read from the answering [`ServerShape`] (`crate::server`) through
//! [`parsed`], the same definition the reconstruction checks its candidates against. Each file
//! then adds one server kind's JSON dressing, with the same two functions, `response`
//! (non-streaming body) and `events` (the SSE stream); [`response`] and [`events`] pick the file
//! by the shape's kind, and a difference between versions of a kind is read from the shape too.
//! A [`Flavor`] is only a name for a shape (`--flavor`).

pub mod fields;
pub mod llamacpp;
pub mod openrouter;
pub mod raw;
pub mod sglang;
pub mod turn;
pub mod vllm;
pub mod wire;

use serde_json::Value;

pub use fields::{detokenized, native_finish_reason, parsed};
pub use turn::Turn;
pub use wire::{
    attach_token_ids, chunk, chunks, deltas, midstream_error, reasoning_key, usage_chunk, Event,
};

use crate::api::ServerKind;
use crate::server::{self, ServerShape};

/// The simulator's names for server shapes (`--flavor`, a named provider's `NAME:FLAVOR`): each
/// is a server kind and, where the kind has several lines, a version ([`Flavor::shape`]).
/// Nothing in the simulator branches on a flavour; an answer is read from its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Flavor {
    /// OpenRouter in front of a Kimi provider (`server::openrouter`).
    #[default]
    OpenRouter,
    /// vLLM's newest line, 0.33 (`server::vllm::SHAPE`).
    Vllm,
    /// vLLM's 0.11–0.2x line (`server::vllm::SHAPE_0_11`).
    Vllm011,
    /// SGLang 0.5 (`server::sglang`).
    Sglang,
    /// llama.cpp without a parser for the family (`server::llamacpp`).
    LlamaCpp,
    /// No parsers: the whole native stream in `content` (`server::generic`).
    Raw,
}

/// Each flavour's name and the server kind and version it answers as (`None`: the kind's
/// newest), in [`Flavor::ALL`]'s order.
const NAMES: [(Flavor, &str, ServerKind, Option<&str>); 6] = [
    (
        Flavor::OpenRouter,
        "openrouter",
        ServerKind::OpenRouter,
        None,
    ),
    (Flavor::Vllm, "vllm", ServerKind::Vllm, None),
    (Flavor::Vllm011, "vllm-0.11", ServerKind::Vllm, Some("0.11")),
    (Flavor::Sglang, "sglang", ServerKind::Sglang, None),
    (Flavor::LlamaCpp, "llamacpp", ServerKind::LlamaCpp, None),
    (Flavor::Raw, "raw", ServerKind::Generic, None),
];

impl Flavor {
    pub const ALL: [Flavor; 6] = [
        Flavor::OpenRouter,
        Flavor::Vllm,
        Flavor::Vllm011,
        Flavor::Sglang,
        Flavor::LlamaCpp,
        Flavor::Raw,
    ];

    pub fn name(self) -> &'static str {
        NAMES[self as usize].1
    }

    /// The server shape this flavour answers with: its kind's, at its version
    /// (`server::shape`).
    pub fn shape(self) -> &'static ServerShape {
        let (_, _, kind, version) = NAMES[self as usize];
        server::shape(kind, version)
    }
}

impl std::str::FromStr for Flavor {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Flavor::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown sim flavor {s:?}: expected one of {}",
                    Flavor::ALL.map(Flavor::name).join(", ")
                )
            })
    }
}

/// The non-streaming response body, in the JSON of the answering shape's kind.
pub fn response(turn: &Turn) -> Value {
    let mut body = match turn.shape.kind {
        ServerKind::OpenRouter => openrouter::response(turn),
        ServerKind::Vllm => vllm::response(turn),
        ServerKind::Sglang => sglang::response(turn),
        ServerKind::LlamaCpp => llamacpp::response(turn),
        ServerKind::Generic => raw::response(turn),
    };
    name_provider(turn, &mut body);
    body
}

/// The streaming response events, in the JSON of the answering shape's kind.
pub fn events(turn: &Turn) -> Vec<Event> {
    let mut events = match turn.shape.kind {
        ServerKind::OpenRouter => openrouter::events(turn),
        ServerKind::Vllm => vllm::events(turn),
        ServerKind::Sglang => sglang::events(turn),
        ServerKind::LlamaCpp | ServerKind::Generic => raw::events(turn),
    };
    for event in &mut events {
        if let Event::Data(chunk) = event {
            name_provider(turn, chunk);
        }
    }
    events
}

/// Behind the named-provider router every answer says who answered, as OpenRouter's do.
fn name_provider(turn: &Turn, body: &mut Value) {
    if let (true, Value::Object(map)) = (turn.provider_in_body, body) {
        map.insert("provider".into(), Value::from(turn.provider.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_one_shape() {
        for (i, flavor) in Flavor::ALL.into_iter().enumerate() {
            assert_eq!(NAMES[i].0, flavor);
            assert_eq!(flavor.name().parse::<Flavor>(), Ok(flavor));
        }
        assert_eq!(Flavor::Vllm.shape(), &server::vllm::SHAPE);
        assert_eq!(Flavor::Vllm011.shape(), &server::vllm::SHAPE_0_11);
        assert_eq!(Flavor::Raw.shape(), &server::generic::SHAPE);
        assert_eq!(Flavor::LlamaCpp.shape(), &server::llamacpp::SHAPE);
    }
}
