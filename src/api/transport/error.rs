//! Transport failures and how their text is joined.

use std::io;
use std::time::Duration;

/// A transport failure, before any HTTP status is known (or in the middle of a body).
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("proxy {proxy}: {reason}")]
    Proxy { proxy: String, reason: String },
    /// The proxy answered the CONNECT with 407 (its credentials are missing or wrong).
    #[error("proxy {proxy} refused the CONNECT tunnel to {target}: 407 proxy authentication required (the user and password in the proxy URL are missing or wrong)")]
    ProxyAuth { proxy: String, target: String },
    #[error("connect timeout ({0:?}) reached")]
    ConnectTimeout(Duration),
    #[error("TLS handshake with {host} failed: {source}")]
    Tls { host: String, source: io::Error },
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    #[error("connection closed before the response was complete")]
    Closed,
    /// The request was written and the connection ended before any byte of an answer: the
    /// server may have processed it, so it is not sent again here.
    #[error("the connection {} after the request was sent, before any response byte ({reason}); the server may have processed it", if *.reused { "(a reused keep-alive one) ended" } else { "ended" })]
    NoAnswer { reused: bool, reason: String },
    #[error("invalid HTTP response: {0}")]
    Protocol(String),
    #[error("HTTP/2 error: {0}")]
    H2(String),
}

impl HttpError {
    pub(super) fn h2(err: &hyper::Error) -> HttpError {
        HttpError::H2(error_chain(err))
    }
}

/// An error and its sources, joined with `: `. A source whose text the message already ends
/// with (`cannot connect to …: {source}`) is not repeated.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
