//! A request handed to a connection ([`Sent`]), its response head ([`HttpAnswer`]) and the body
//! read from it, on HTTP/1.1 or HTTP/2; a complete HTTP/1.1 exchange gives its connection back to
//! the route's pool.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use http_body_util::BodyExt;

use super::conn::Conn;
use super::error::HttpError;
use super::http1;
use super::pools::{IdlePool, OpenStream};

/// A request that has been handed to a connection; [`Sent::answer`] reads the response head.
pub(crate) struct Sent {
    /// When the request was written: the first-byte timeout runs from here.
    pub at: Instant,
    pub(super) inner: SentOn,
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = match self.inner {
            SentOn::H1 { .. } => "HTTP/1.1",
            SentOn::H2 { .. } => "HTTP/2",
        };
        f.debug_struct("Sent").field("on", &on).finish()
    }
}

type H2Response = std::pin::Pin<
    Box<dyn Future<Output = hyper::Result<hyper::Response<hyper::body::Incoming>>> + Send>,
>;

pub(super) enum SentOn {
    H1 {
        conn: Conn,
        reused: bool,
        idle: Arc<IdlePool>,
    },
    H2 {
        response: H2Response,
        stream: OpenStream,
    },
}

impl Sent {
    /// Wait for the response head; the body is read from the returned [`HttpAnswer`]. A connection
    /// that ends before any response byte is [`HttpError::NoAnswer`]: never resent here.
    pub async fn answer(self) -> Result<HttpAnswer, HttpError> {
        match self.inner {
            SentOn::H1 { conn, reused, idle } => {
                match http1::Response::read_head(conn, false).await {
                    Ok(response) => Ok(HttpAnswer {
                        status: response.head.status,
                        content_type: response.head.content_type.clone(),
                        retry_after: response.head.retry_after.clone(),
                        generation_id: response.head.generation_id.clone(),
                        location: response.head.location.clone(),
                        rate_limit: response.head.rate_limit.clone(),
                        body: Body::H1 {
                            response: Some(response),
                            idle,
                        },
                    }),
                    Err((e @ (HttpError::Closed | HttpError::Io(_)), false)) => {
                        Err(HttpError::NoAnswer {
                            reused,
                            reason: e.to_string(),
                        })
                    }
                    Err((e, _)) => Err(e),
                }
            }
            SentOn::H2 { response, stream } => {
                let response = response.await.map_err(|e| HttpError::h2(&e))?;
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v.trim().to_string())
                };
                Ok(HttpAnswer {
                    status: response.status().as_u16(),
                    content_type: header("content-type"),
                    retry_after: header("retry-after"),
                    generation_id: header("x-generation-id"),
                    location: header("location"),
                    rate_limit: rate_limit(response.headers()),
                    body: Body::H2 {
                        body: response.into_body(),
                        _open: stream,
                    },
                })
            }
        }
    }
}

/// The `X-RateLimit-*` headers of an HTTP/2 answer.
fn rate_limit(headers: &hyper::HeaderMap) -> Option<Box<crate::api::Advertised>> {
    let mut advertised = None;
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            crate::api::Advertised::header(&mut advertised, name.as_str(), value);
        }
    }
    advertised
}

/// A response whose head has arrived.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
    pub generation_id: Option<String>,
    /// `Location` (of a 3xx).
    pub location: Option<String>,
    /// `X-RateLimit-*` headers, if any.
    pub rate_limit: Option<Box<crate::api::Advertised>>,
    body: Body,
}

// HTTP/1.1 is the common case: boxing its (larger) variant would allocate for every request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Body {
    /// Goes back to the route's pool when dropped after a complete, reusable exchange.
    H1 {
        response: Option<http1::Response>,
        idle: Arc<IdlePool>,
    },
    /// The stream counts as open on its connection until the body is dropped.
    H2 {
        body: hyper::body::Incoming,
        _open: OpenStream,
    },
}

impl HttpAnswer {
    /// Append the next piece of the body to `out`; `Ok(false)` once the body is complete.
    pub async fn next(&mut self, out: &mut Vec<u8>) -> Result<bool, HttpError> {
        match &mut self.body {
            Body::H1 { response, .. } => match response {
                Some(response) => response.next(out).await,
                None => Ok(false),
            },
            Body::H2 { body, .. } => loop {
                match body.frame().await {
                    None => return Ok(false),
                    Some(Err(e)) => return Err(HttpError::h2(&e)),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            out.extend_from_slice(&data);
                            return Ok(true);
                        }
                    }
                }
            },
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Body::H1 { response, idle } = self {
            if let Some(mut conn) = response.take().and_then(http1::Response::into_reusable) {
                conn.reused = true;
                idle.checkin(conn);
            }
        }
    }
}
