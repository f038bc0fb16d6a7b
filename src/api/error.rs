//! [`ApiError`]: a failed attempt with its class, as the journal records it.

use std::time::Duration;

use crate::journal::ErrorClass;

/// One failed attempt. `message` never contains the API key.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{class:?}: {message}")]
pub struct ApiError {
    pub class: ErrorClass,
    pub message: String,
    pub http_status: Option<u16>,
    /// From a `Retry-After` header (seconds or HTTP date), if the server sent one.
    pub retry_after: Option<Duration>,
    /// Whatever body we got (the error JSON, or a partial stream assembled so far).
    pub body: Option<serde_json::Value>,
}
