//! The simulator's listening socket, with an accept queue deep enough for a client that opens
//! thousands of connections at once.

use tokio::net::TcpListener;

/// The accept queue every sim listens with. A client ramping to thousands in flight opens them
/// in one burst, and tokio's default backlog (1024) dropped the SYNs beyond it (retransmitted
/// 1 s, 3 s, 7 s later: a stall that measured the kernel, not the client; capacity_bench at 5,000).
/// The kernel caps it at `net.core.somaxconn`.
pub const LISTEN_BACKLOG: u32 = 16_384;

/// A listener on `host:port` with the sim's deep accept queue ([`LISTEN_BACKLOG`]): the first of
/// the host's addresses that binds, as `TcpListener::bind` tries them (address reuse included).
pub async fn listen(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let mut last_error = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket
            .bind(addr)
            .and_then(|()| socket.listen(LISTEN_BACKLOG))
        {
            Ok(listener) => return Ok(listener),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{host} resolves to no address"),
        )
    }))
}
