//! An HTTP/1.1 connection (plain or TLS) over a TCP stream that counts what the kernel took, so a
//! failed write can tell whether any byte of the request left.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// An HTTP/1.1 connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(super) io: Io,
    /// It has carried a request before (so the server may have closed it meanwhile).
    pub(super) reused: bool,
}

#[derive(Debug)]
pub(super) enum Io {
    Plain(Tcp),
    Tls(Box<TlsStream<Tcp>>),
}

/// A TCP stream that counts the bytes the kernel took, so a failed write can tell whether any
/// byte of the request left (below TLS: what the socket took, not what rustls buffered).
#[derive(Debug)]
pub(super) struct Tcp {
    pub(super) stream: TcpStream,
    written: u64,
}

impl Tcp {
    pub(super) fn new(stream: TcpStream) -> Tcp {
        Tcp { stream, written: 0 }
    }
}

impl AsyncRead for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            this.written += n as u64;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl Conn {
    pub(super) fn new(io: Io) -> Conn {
        Conn { io, reused: false }
    }

    pub(super) fn tcp(&self) -> &Tcp {
        match &self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_ref().0,
        }
    }

    pub(super) fn tcp_mut(&mut self) -> &mut Tcp {
        match &mut self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_mut().0,
        }
    }

    /// Bytes the kernel has taken since the last [`Conn::reset_written`].
    pub(super) fn written(&self) -> u64 {
        self.tcp().written
    }

    pub(super) fn reset_written(&mut self) {
        self.tcp_mut().written = 0;
    }

    /// Whether an idle connection can take a request: the server has not closed it (and, on a
    /// plain one, sent nothing unasked). One non-blocking `recv(MSG_PEEK)` per request taken
    /// from the pool — not the runtime's cached readiness, which may not have seen a FIN that
    /// arrived a moment ago: a request written into a closed connection may not be resent.
    pub(super) fn still_open(&mut self) -> bool {
        let mut byte = [MaybeUninit::<u8>::uninit(); 1];
        match socket2::SockRef::from(&self.tcp().stream).peek(&mut byte) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            Err(_) | Ok(0) => false,
            Ok(_) => match &mut self.io {
                Io::Plain(_) => false,
                // TLS servers may send a session ticket after the handshake (fine), or a
                // close_notify before closing (not): let rustls read what is there.
                Io::Tls(tls) => {
                    let mut cx = Context::from_waker(std::task::Waker::noop());
                    let mut byte = [0u8; 1];
                    let mut buf = ReadBuf::new(&mut byte);
                    matches!(
                        Pin::new(tls.as_mut()).poll_read(&mut cx, &mut buf),
                        Poll::Pending
                    )
                }
            },
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}
