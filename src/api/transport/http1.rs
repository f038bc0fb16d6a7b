//! A lean HTTP/1.1 exchange: the request task writes one request and reads its response on a
//! connection it holds itself.
//!
//! Why not hyper's HTTP/1 client: hyper runs every connection as a task of its own, fed through a
//! dispatch channel (a 32-slot block) and with 8 KiB read and write buffers kept for the
//! connection's life. Measured with reqwest on top, that was ~28 KB per connection — ~300 MB at
//! 10,000 connections — and several task wake-ups per request (BENCHMARKS.md, "Generate"). Here an
//! idle connection is just its socket, bytes are buffered only while a response is being read (a
//! per-thread scratch buffer, then exactly the bytes received), and a request costs one write and
//! usually one read. httparse parses the status line, the headers and the chunk-size lines; this
//! file only frames the body: `Content-Length`, `chunked`, or until the server closes.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

use super::conn::Conn;
use super::error::HttpError;

/// Most response headers accepted (OpenRouter behind Cloudflare sends about 25).
const MAX_HEADERS: usize = 128;
/// Largest response head accepted.
const MAX_HEAD_BYTES: usize = 64 << 10;
/// Size of the per-thread buffer each socket read goes through.
const SCRATCH_BYTES: usize = 64 << 10;

thread_local! {
    /// Every read lands here first and only the bytes received are copied out, so a connection
    /// waiting for its answer holds no read buffer at all.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice());
}

/// Append what the connection has to `buf` (waits until something arrives); `Ok(0)` at EOF.
pub(crate) async fn read_some(conn: &mut Conn, buf: &mut Vec<u8>) -> io::Result<usize> {
    poll_fn(|cx| {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let mut read = ReadBuf::new(&mut scratch[..]);
            match Pin::new(&mut *conn).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    buf.extend_from_slice(read.filled());
                    Poll::Ready(Ok(read.filled().len()))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            }
        })
    })
    .await
}

/// Write a whole request (head and body in one buffer: one `write` on a plain socket).
pub(crate) async fn write_request(conn: &mut Conn, request: &[u8]) -> io::Result<()> {
    conn.write_all(request).await?;
    conn.flush().await
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    /// Until the server closes the connection (no length, not chunked).
    Close,
}

/// The parts of a response head the client uses.
#[derive(Debug)]
pub(crate) struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
    pub generation_id: Option<String>,
    pub location: Option<String>,
    /// `X-RateLimit-*` headers, if any.
    pub rate_limit: Option<Box<crate::api::Advertised>>,
    framing: Framing,
    /// HTTP/1.1 without `Connection: close`: the connection may carry the next request.
    keep_alive: bool,
}

/// Parse a complete response head at the start of `buf`: `Ok(None)` if more bytes are needed,
/// else the head and its length. Interim (1xx) responses are skipped.
fn parse_head(buf: &[u8], method_is_head: bool) -> Result<Option<(Head, usize)>, HttpError> {
    let mut start = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(&buf[start..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                if buf.len() - start > MAX_HEAD_BYTES {
                    return Err(HttpError::Protocol(format!(
                        "response head larger than {MAX_HEAD_BYTES} bytes"
                    )));
                }
                return Ok(None);
            }
            Err(e) => return Err(HttpError::Protocol(format!("invalid response head: {e}"))),
        };
        let status = response.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            start += len;
            continue;
        }
        let mut head = Head {
            status,
            content_type: None,
            retry_after: None,
            generation_id: None,
            location: None,
            rate_limit: None,
            framing: Framing::Close,
            keep_alive: response.version == Some(1),
        };
        let (length, chunked) = read_headers(response.headers, &mut head)?;
        head.framing = if method_is_head || status == 204 || status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked
        } else if let Some(length) = length {
            Framing::Length(length)
        } else {
            Framing::Close
        };
        if head.framing == Framing::Close {
            head.keep_alive = false;
        }
        return Ok(Some((head, start + len)));
    }
}

/// Fill `head` from the response's headers; returns the body's `content-length` (if any) and
/// whether its transfer coding ends in `chunked`.
fn read_headers(
    headers: &[httparse::Header<'_>],
    head: &mut Head,
) -> Result<(Option<u64>, bool), HttpError> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for header in headers {
        let value = || String::from_utf8_lossy(header.value).trim().to_string();
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let parsed = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    HttpError::Protocol(format!("invalid content-length {:?}", value()))
                })?;
            if length.is_some_and(|l| l != parsed) {
                return Err(HttpError::Protocol(
                    "conflicting content-length headers".into(),
                ));
            }
            length = Some(parsed);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding decides; anything but chunked last means "until close".
            chunked = value()
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            let v = value();
            if v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")) {
                head.keep_alive = false;
            }
        } else if name.eq_ignore_ascii_case("content-type") {
            head.content_type = Some(value());
        } else if name.eq_ignore_ascii_case("retry-after") {
            head.retry_after = Some(value());
        } else if name.eq_ignore_ascii_case("x-generation-id") {
            head.generation_id = Some(value());
        } else if name.eq_ignore_ascii_case("location") {
            head.location = Some(value());
        } else {
            crate::api::Advertised::header(&mut head.rate_limit, name, &value());
        }
    }
    Ok((length, chunked))
}

/// Where a chunked body's decoder is.
#[derive(Debug, Clone, Copy)]
enum Chunk {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last (zero) chunk: trailer lines until an empty one.
    Trailer,
}

/// A response being read: the head, then the body piece by piece.
#[derive(Debug)]
pub(crate) struct Response {
    pub head: Head,
    conn: Conn,
    /// Bytes read from the connection and not yet decoded (`raw[pos..]`).
    raw: Vec<u8>,
    pos: usize,
    /// Length-framed bytes still to come, or the chunked decoder's state.
    left: u64,
    chunk: Chunk,
    done: bool,
}

impl Response {
    /// Read the response head; the body is left for [`Response::next`]. `Err` carries whether
    /// any byte of a response had arrived: none means the connection ended after the request was
    /// written, which the transport reports as such (the server may have processed the request,
    /// so it is not sent again behind the caller's back).
    pub async fn read_head(
        mut conn: Conn,
        method_is_head: bool,
    ) -> Result<Response, (HttpError, bool)> {
        let mut raw = Vec::new();
        loop {
            match parse_head(&raw, method_is_head) {
                Ok(Some((head, len))) => {
                    let left = match head.framing {
                        Framing::Length(n) => n,
                        _ => 0,
                    };
                    let done = head.framing == Framing::Length(0);
                    return Ok(Response {
                        head,
                        conn,
                        raw,
                        pos: len,
                        left,
                        chunk: Chunk::Size,
                        done,
                    });
                }
                Ok(None) => {}
                Err(e) => return Err((e, true)),
            }
            match read_some(&mut conn, &mut raw).await {
                Ok(0) => {
                    let got = !raw.is_empty();
                    return Err((HttpError::Closed, got));
                }
                Ok(_) => {}
                Err(e) => {
                    let got = !raw.is_empty();
                    return Err((HttpError::Io(e), got));
                }
            }
        }
    }

    /// Append the next piece of the body to `out`; `Ok(false)` once the body is complete.
    pub async fn next(&mut self, out: &mut Vec<u8>) -> Result<bool, HttpError> {
        loop {
            if self.done {
                return Ok(false);
            }
            let before = out.len();
            self.decode(out)?;
            if out.len() > before {
                return Ok(true);
            }
            if self.done {
                return Ok(false);
            }
            // Everything buffered is decoded: drop it before reading more.
            self.raw.drain(..self.pos);
            self.pos = 0;
            let n = read_some(&mut self.conn, &mut self.raw).await?;
            if n == 0 {
                if self.head.framing == Framing::Close {
                    self.done = true;
                    return Ok(false);
                }
                return Err(HttpError::Closed);
            }
        }
    }

    /// The connection, if the exchange ended cleanly and it may carry another request.
    pub fn into_reusable(self) -> Option<Conn> {
        (self.done && self.head.keep_alive && self.pos == self.raw.len()).then_some(self.conn)
    }

    /// Decode what is buffered into `out`.
    fn decode(&mut self, out: &mut Vec<u8>) -> Result<(), HttpError> {
        match self.head.framing {
            Framing::Close => {
                out.extend_from_slice(&self.raw[self.pos..]);
                self.pos = self.raw.len();
            }
            Framing::Length(_) => {
                let available = (self.raw.len() - self.pos) as u64;
                let take = available.min(self.left) as usize;
                out.extend_from_slice(&self.raw[self.pos..self.pos + take]);
                self.pos += take;
                self.left -= take as u64;
                self.done = self.left == 0;
            }
            Framing::Chunked => self.decode_chunked(out)?,
        }
        Ok(())
    }

    fn decode_chunked(&mut self, out: &mut Vec<u8>) -> Result<(), HttpError> {
        loop {
            let rest = &self.raw[self.pos..];
            match self.chunk {
                Chunk::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.pos += used;
                        self.chunk = if size == 0 {
                            Chunk::Trailer
                        } else {
                            Chunk::Data(size)
                        };
                    }
                    Ok(httparse::Status::Partial) => return Ok(()),
                    Err(_) => return Err(HttpError::Protocol("invalid chunk size line".into())),
                },
                Chunk::Data(left) => {
                    if rest.is_empty() {
                        return Ok(());
                    }
                    let take = (rest.len() as u64).min(left) as usize;
                    out.extend_from_slice(&rest[..take]);
                    self.pos += take;
                    let left = left - take as u64;
                    self.chunk = if left == 0 {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left)
                    };
                }
                Chunk::DataEnd => {
                    if rest.len() < 2 {
                        return Ok(());
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(HttpError::Protocol(
                            "chunk data not followed by CRLF".into(),
                        ));
                    }
                    self.pos += 2;
                    self.chunk = Chunk::Size;
                }
                Chunk::Trailer => {
                    let Some(end) = memchr::memmem::find(rest, b"\r\n") else {
                        return Ok(());
                    };
                    self.pos += end + 2;
                    if end == 0 {
                        self.done = true;
                        return Ok(());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_framed_by_length_chunked_or_close() {
        let (head, len) = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nRetry-After: 3\r\n\r\n{}",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(len, 87);
        assert_eq!(head.framing, Framing::Length(12));
        assert!(head.keep_alive);
        assert_eq!(head.content_type.as_deref(), Some("application/json"));
        assert_eq!(head.retry_after.as_deref(), Some("3"));

        let (head, _) = parse_head(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((head.status, head.framing), (200, Framing::Chunked));

        let (head, _) = parse_head(
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert!(!head.keep_alive);
        let (head, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!(head.framing, Framing::Close);
        assert!(!head.keep_alive);

        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-le", false)
            .unwrap()
            .is_none());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", false).is_err());
        assert!(parse_head(b"garbage\r\n\r\n", false).is_err());
    }
}
