//! [`ErrorClass`]: why an attempt failed, the vocabulary of error classification ([`super::classify`])
//! that the journal records and the engine's retry policy reads.

use serde::{Deserialize, Serialize};

/// Why an attempt failed. Transient classes are retried (and retried again on resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 408
    Timeout,
    /// 429, or an `error` object with code 429 in a 200 before any output
    RateLimited,
    /// 5xx
    ServerError,
    /// connect/reset/DNS
    Network,
    /// an `error` chunk in the middle of a stream
    MidStream,
    /// an `error` object inside an HTTP 200 body (other than a 429)
    ErrorIn200,
    /// no reasoning, no content, no tool calls
    EmptyAnswer,
    /// body that is not the JSON we expect
    Malformed,
    /// an answer beyond the limits every journal reader parses with (size, nesting depth; see
    /// `json_limits.rs`): retried once in a session, then failed for good
    OverLimit,
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
    /// The proxy (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY) refused: 407, or its own 401; the request
    /// never reached the server. Not the API key's fault, and not transient.
    ProxyAuth,
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
