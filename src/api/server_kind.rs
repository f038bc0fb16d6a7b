//! Which server software answers an endpoint: one type for the configuration (`kind` in
//! `[[endpoints]]`, `--kind`), the request fields it decides, and the shape tables keyed by it.

use serde::{Deserialize, Serialize};

/// Which server software answers; decides the server-specific request fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    #[serde(alias = "openrouter")]
    OpenRouter,
    Vllm,
    Sglang,
    #[serde(alias = "llamacpp", alias = "llama.cpp")]
    LlamaCpp,
    /// Any other OpenAI-compatible server: only standard fields are added.
    #[default]
    Generic,
}

impl ServerKind {
    /// The name a configuration spells it with (`kind = "…"`, `--kind`), also used in endpoint
    /// labels.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::OpenRouter => "openrouter",
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::LlamaCpp => "llamacpp",
            ServerKind::Generic => "generic",
        }
    }

    /// Whether this kind of server, left to its defaults, puts a space on each side of every
    /// special token it detokenizes: vLLM does (`spaces_between_special_tokens` defaults to
    /// true); the others are assumed not to.
    pub fn default_spaces_around_special_tokens(self) -> bool {
        self == ServerKind::Vllm
    }

    /// The kind a bare `--base-url` most likely is.
    pub fn guess(base_url: &str) -> ServerKind {
        if base_url.contains("openrouter.ai") {
            ServerKind::OpenRouter
        } else {
            ServerKind::Generic
        }
    }
}

/// The configuration's spellings (`--kind`, `kind = "…"` in `[[endpoints]]`).
impl std::str::FromStr for ServerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openrouter" => Ok(ServerKind::OpenRouter),
            "vllm" => Ok(ServerKind::Vllm),
            "sglang" => Ok(ServerKind::Sglang),
            "llamacpp" | "llama_cpp" | "llama.cpp" => Ok(ServerKind::LlamaCpp),
            "generic" => Ok(ServerKind::Generic),
            other => Err(format!(
                "unknown endpoint kind {other:?}: expected openrouter, vllm, sglang, llamacpp or generic"
            )),
        }
    }
}
