//! [`ApiError`]: a failed attempt with its class, as the journal records it.

use std::time::Duration;

use serde_json::Value;

use super::ApiKey;
use crate::api::ErrorClass;

/// One failed attempt. `message` and `body` never contain the API key: [`Client`](super::Client)
/// scrubs both before an error leaves it.
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

impl ApiError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        ApiError {
            class,
            message: message.into(),
            http_status: None,
            retry_after: None,
            body: None,
        }
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// The body to journal with the error; a body nested too deep for the journal's readers is
    /// not kept (its record would be a line they cannot parse).
    pub fn with_body(mut self, body: Option<Value>) -> Self {
        self.body = body.filter(super::json_limits::fits);
        self
    }

    /// The same error with `key` removed from its message and body.
    pub fn scrubbed(mut self, key: Option<&ApiKey>) -> Self {
        if let Some(key) = key {
            self.message = key.scrub(&self.message);
            if let Some(body) = self.body.as_mut() {
                key.scrub_json(body);
            }
        }
        self
    }
}
