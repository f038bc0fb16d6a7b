//! The addresses of a route's host, resolved by the system once a minute instead of once per
//! connection (a big local run opens 10,000 at its start).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::dns::Name;
use tower_service::Service;

/// How long resolved addresses of a host name are reused before asking the resolver again.
const DNS_TTL: Duration = Duration::from_secs(60);

/// The addresses last resolved for a host, and when.
pub(super) type AddrCache = Arc<Mutex<Option<(Arc<[SocketAddr]>, Instant)>>>;

/// The `HttpConnector`'s resolver: the system's (`getaddrinfo`, as tokio's `lookup_host`), asked
/// once per [`DNS_TTL`] per route instead of once per connection.
#[derive(Clone)]
pub(super) struct CachedResolver {
    pub(super) cache: AddrCache,
}

/// The addresses of one lookup, in the resolver's order.
pub(super) struct Addrs(Arc<[SocketAddr]>, usize);

impl Iterator for Addrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        let addr = self.0.get(self.1).copied();
        self.1 += 1;
        addr
    }
}

impl Service<Name> for CachedResolver {
    type Response = Addrs;
    type Error = io::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let cache = self.cache.clone();
        Box::pin(async move {
            if let Some((addrs, at)) = cache.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                if at.elapsed() < DNS_TTL {
                    return Ok(Addrs(addrs.clone(), 0));
                }
            }
            // Port 0: the connector puts the URL's port in.
            let addrs: Arc<[SocketAddr]> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            *cache.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((addrs.clone(), Instant::now()));
            Ok(Addrs(addrs, 0))
        })
    }
}
