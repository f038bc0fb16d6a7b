//! [`Record`]: one finished attempt, as written to the journal (never the API key).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Success,
    Failed,
    Skipped,
}

/// Why an attempt failed. Transient classes are retried (and retried again on resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 408
    Timeout,
    /// 429
    RateLimited,
    /// 5xx
    ServerError,
    /// connect/reset/DNS
    Network,
    /// an `error` chunk in the middle of a stream
    MidStream,
    /// an `error` object inside an HTTP 200 body
    ErrorIn200,
    /// no reasoning, no content, no tool calls
    EmptyAnswer,
    /// body that is not the JSON we expect
    Malformed,
    /// 400
    BadRequest,
    /// 401
    Unauthorized,
    /// 402
    PaymentRequired,
    /// 403 (moderation, guardrail)
    Forbidden,
    /// 404 and other 4xx
    ClientError,
}

impl ErrorClass {
    /// Whether a retry (now or on resume) can succeed.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorClass::Timeout
                | ErrorClass::RateLimited
                | ErrorClass::ServerError
                | ErrorClass::Network
                | ErrorClass::MidStream
                | ErrorClass::ErrorIn200
                | ErrorClass::EmptyAnswer
                | ErrorClass::Malformed
        )
    }
}

/// One finished attempt. Serialized in field order, small fields first, `request` and `response` last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The prompt id.
    pub id: String,
    /// 1-based attempt number for this prompt within the run.
    pub attempt: u32,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Endpoint name or base URL (never a key).
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// RFC 3339 start time.
    pub started_at: String,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u64>,
    // The big bodies come last: serde writes fields in declaration order, and the resume index
    // reads only the line's prefix up to `,"request":` (see `scan.rs`). Keep new small fields
    // above this point.
    /// The request body as sent (never a key).
    pub request: Value,
    /// The raw chat.completion JSON (assembled from the stream when streaming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}
