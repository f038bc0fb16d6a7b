//! The HTTP client: one pooled reqwest client (rustls with ring), timeouts at every stage,
//! streaming (SSE) and non-streaming calls, error classification.

use std::time::Duration;

use serde_json::Value;

use super::{ApiError, ApiKey};

/// One OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Short name used in logs and the journal.
    pub name: String,
    /// Base URL up to `/v1` (e.g. `https://openrouter.ai/api/v1`).
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Relative share of requests.
    pub weight: u32,
}

/// Timeouts for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    /// Longest silence between stream chunks.
    pub idle: Duration,
    pub total: Duration,
}

/// A successful HTTP exchange: the chat.completion JSON (assembled from the stream when streaming).
#[derive(Debug, Clone)]
pub struct ChatOutcome {
    pub response: Value,
    pub http_status: u16,
    pub first_byte_ms: Option<u64>,
    pub latency_ms: u64,
    /// OpenRouter `X-Generation-Id`, if sent.
    pub generation_id: Option<String>,
}

/// A pooled client shared by all in-flight requests.
#[derive(Clone)]
pub struct Client {}

impl Client {
    /// POST `{base_url}/chat/completions` with `body`; classify any failure.
    pub async fn chat(
        &self,
        _endpoint: &Endpoint,
        _body: &Value,
        _timeouts: &Timeouts,
    ) -> Result<ChatOutcome, ApiError> {
        todo!()
    }
}
