use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use super::connect::Connected;
use super::pools::STREAMS_PER_H2_CONNECTION;
use super::*;
use crate::api::Proxies;
use http_body_util::BodyExt;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

const CA: &[u8] = include_bytes!("../../../tests/data/tls/ca.pem");
const CERT: &[u8] = include_bytes!("../../../tests/data/tls/server.pem");
const KEY: &[u8] = include_bytes!("../../../tests/data/tls/server.key");

/// A TLS server offering `alpn` that answers every request with JSON describing it.
async fn tls_server(alpn: Vec<Vec<u8>>) -> u16 {
    tls_server_serving(alpn, usize::MAX).await
}

/// [`tls_server`] that serves its first `served` connections; later ones are accepted and
/// never answered (a TLS handshake that hangs).
async fn tls_server_serving(alpn: Vec<Vec<u8>>, mut served: usize) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(CERT).unwrap()],
            PrivateKeyDer::from_pem_slice(KEY).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = alpn;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut stalled = Vec::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            if served == 0 {
                stalled.push(tcp);
                continue;
            }
            served -= 1;
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let service = hyper::service::service_fn(
                    |request: hyper::Request<hyper::body::Incoming>| async move {
                        let (head, body) = request.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let auth = head.headers.get("authorization").cloned();
                        let answer = serde_json::json!({
                            "version": format!("{:?}", head.version),
                            "method": head.method.as_str(),
                            "path": head.uri.path(),
                            "authorization": auth.and_then(|v| v.to_str().ok().map(str::to_string)),
                            "body": String::from_utf8_lossy(&body),
                        });
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from(answer.to_string()),
                        )))
                    },
                );
                let io = TokioIo::new(tls);
                if h2 {
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(io, service)
                        .await;
                } else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                }
            });
        }
    });
    port
}

fn transport(http1_only: bool) -> Transport {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).unwrap())
        .unwrap();
    let settings = ClientConfig {
        user_agent: "draftgen-test".into(),
        connect_timeout: Duration::from_secs(30),
        pool_max_idle_per_host: usize::MAX,
        pool_idle_timeout: Duration::from_secs(90),
        tcp_keepalive: None,
        http1_only,
        referer: None,
        title: None,
        proxies: Proxies::none(),
        extra_ca_pem: None,
        keep_stream_chunks: false,
        max_answer_bytes: crate::api::json_limits::DEFAULT_MAX_ANSWER_BYTES,
    };
    Transport::with_roots(settings, roots).unwrap()
}

async fn exchange(route: &Arc<Route>, request: HttpRequest<'_>) -> serde_json::Value {
    let mut answer = route.send(request).await.unwrap().answer().await.unwrap();
    assert_eq!(answer.status, 200);
    let mut body = Vec::new();
    while answer.next(&mut body).await.unwrap() {}
    serde_json::from_slice(&body).unwrap()
}

/// HTTPS with the server's certificate checked; HTTP/2 when ALPN offers it (requests then
/// share its connection), HTTP/1.1 over TLS when it does not or when asked to.
#[tokio::test]
async fn https_speaks_http2_when_offered_and_http1_otherwise() {
    let key = ApiKey::new("sk-test-key");
    for (alpn, http1_only, version) in [
        (
            vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            false,
            "HTTP/2.0",
        ),
        (vec![b"http/1.1".to_vec()], false, "HTTP/1.1"),
        (vec![b"h2".to_vec(), b"http/1.1".to_vec()], true, "HTTP/1.1"),
    ] {
        let port = tls_server(alpn).await;
        let transport = transport(http1_only);
        let route = transport
            .route(&format!("https://localhost:{port}/api/v1/"), Some(&key))
            .unwrap();
        for _ in 0..3 {
            let answer = exchange(&route, HttpRequest::Chat(br#"{"model":"m"}"#)).await;
            assert_eq!(answer["version"], version);
            assert_eq!(answer["method"], "POST");
            assert_eq!(answer["path"], "/api/v1/chat/completions");
            assert_eq!(answer["authorization"], "Bearer sk-test-key");
            assert_eq!(answer["body"], r#"{"model":"m"}"#);
        }
        let answer = exchange(&route, HttpRequest::Get("key")).await;
        assert_eq!(
            (answer["method"].as_str(), answer["path"].as_str()),
            (Some("GET"), Some("/api/v1/key"))
        );
        let idle = route.idle.idle.lock().unwrap().len();
        assert_eq!(idle, usize::from(version == "HTTP/1.1"), "{version}");
    }
}

/// Past [`STREAMS_PER_H2_CONNECTION`] open streams a request opens another HTTP/2
/// connection instead of queueing behind the server's stream limit; finished streams free
/// their places.
#[tokio::test]
async fn http2_streams_spread_over_connections() {
    let port = tls_server(vec![b"h2".to_vec()]).await;
    let transport = transport(false);
    let route = transport
        .route(&format!("https://localhost:{port}/v1"), None)
        .unwrap();
    let mut open = Vec::new();
    for _ in 0..2 * STREAMS_PER_H2_CONNECTION + 1 {
        let sent = route.send(HttpRequest::Get("models")).await.unwrap();
        let answer = sent.answer().await.unwrap();
        assert_eq!(answer.status, 200);
        open.push(answer);
    }
    assert_eq!(route.h2.lock().unwrap().connections.len(), 3);
    drop(open);
    for _ in 0..STREAMS_PER_H2_CONNECTION {
        exchange(&route, HttpRequest::Get("models")).await;
    }
    assert_eq!(route.h2.lock().unwrap().connections.len(), 3);
}

/// No lock is held across a handshake: while one request waits on a new HTTP/2 connection
/// whose TLS handshake never ends, a request that finds a free stream on the existing
/// connection goes ahead.
#[tokio::test]
async fn a_hanging_handshake_does_not_hold_up_requests_with_a_free_stream() {
    let port = tls_server_serving(vec![b"h2".to_vec()], 1).await;
    let mut transport = transport(false);
    // Long enough that waiting for it would hang the test.
    transport.settings.connect_timeout = Duration::from_secs(3600);
    let route = transport
        .route(&format!("https://localhost:{port}/v1"), None)
        .unwrap();
    let mut open = Vec::new();
    for _ in 0..STREAMS_PER_H2_CONNECTION {
        let sent = route.send(HttpRequest::Get("models")).await.unwrap();
        open.push(sent.answer().await.unwrap());
    }
    // Every stream is busy: this one opens a second connection, which hangs.
    let stuck = tokio::spawn({
        let route = route.clone();
        async move { route.send(HttpRequest::Get("models")).await.map(|_| ()) }
    });
    while !route.h2.lock().unwrap().connecting {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(open.pop());
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        exchange(&route, HttpRequest::Get("models")),
    )
    .await
    .expect("the request waited behind the hanging handshake");
    assert_eq!(answer["version"], "HTTP/2.0");
    assert!(route.h2.lock().unwrap().connecting, "still connecting");
    stuck.abort();
}

/// Happy Eyeballs: a host whose first address is black-holed (a loopback listener whose
/// backlog is full drops further SYNs: the connect hangs, as to an unreachable IPv6 route)
/// is reached through its other address instead of waiting out the connect timeout — and
/// one whose first address refuses (`localhost` as ::1 with a server on IPv4 only) too.
#[tokio::test]
async fn a_black_holed_first_address_does_not_fail_the_endpoint() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback here, so no second address family to fall back to");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { while listener.accept().await.is_ok() {} });
    let v4 = SocketAddr::from(([127, 0, 0, 1], port));

    // The black hole, on [::1] and the server's port: listen with a backlog of zero, never
    // accept, fill the queue.
    let hole_addr = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
    let hole = socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None).unwrap();
    hole.bind(&hole_addr.into()).unwrap();
    hole.listen(0).unwrap();
    let mut fillers = Vec::new();
    let black_holed = loop {
        // Once the queue is full a connect no longer completes.
        let attempt =
            tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(hole_addr)).await;
        match attempt {
            Ok(Ok(stream)) => fillers.push(stream),
            Ok(Err(_)) => break false,
            Err(_) => break true,
        }
        if fillers.len() > 16 {
            break false;
        }
    };
    if !black_holed {
        eprintln!("skipped: this kernel answers SYNs to a full backlog; no black hole to test");
        return;
    }

    let mut transport = transport(false);
    // Far longer than the test may take: success means the other address was tried.
    transport.settings.connect_timeout = Duration::from_secs(3600);
    let route = transport
        .route(&format!("http://localhost:{port}/v1"), None)
        .unwrap();
    let refusing = SocketAddr::from(([127, 0, 0, 3], port));
    for addrs in [[hole_addr, v4], [refusing, v4]] {
        *route.connector.addrs.lock().unwrap() = Some((Arc::from(addrs), Instant::now()));
        let connected = tokio::time::timeout(Duration::from_secs(120), route.connector.connect())
            .await
            .unwrap_or_else(|_| panic!("{addrs:?}: stuck on the first address"));
        assert!(matches!(connected, Ok(Connected::H1(_))), "{addrs:?}");
    }
    drop(fillers);
}

/// A certificate no trusted root signed is refused.
#[tokio::test]
async fn https_refuses_an_untrusted_certificate() {
    let port = tls_server(vec![b"http/1.1".to_vec()]).await;
    let transport = Transport::new(transport(false).settings.clone(), Vec::new()).unwrap();
    let route = transport
        .route(&format!("https://localhost:{port}/v1"), None)
        .unwrap();
    let err = route.send(HttpRequest::Get("models")).await.unwrap_err();
    assert!(matches!(err, HttpError::Tls { .. }), "{err}");
}
