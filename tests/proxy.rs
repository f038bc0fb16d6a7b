//! Proxies, against a real one: Debian's `tinyproxy` on 127.0.0.1 with basic auth, started by
//! each test on a free port with a temporary config. Plain targets go through it in absolute
//! form, `https://` targets through a CONNECT tunnel to a local TLS server (tests/data/tls);
//! the proxy's credentials never appear in an error or in `generate`'s output.
//!
//! Skipped, saying so, only when the `tinyproxy` binary is absent (CI installs it: .ci/run).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use draftgen::api::{Client, ClientConfig, Endpoint, ErrorClass, Proxies, Timeouts};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");
const USER: &str = "alice";
const PASSWORD: &str = "pr0xy-s3cret";
const TLS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tls");

fn tinyproxy_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("tinyproxy"))
        .find(|p| p.is_file())
}

/// A running tinyproxy, stopped when dropped.
struct Tinyproxy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Tinyproxy {
    fn url(&self, password: &str) -> String {
        format!("http://{USER}:{password}@127.0.0.1:{}", self.port)
    }
}

fn start_tinyproxy() -> Option<Tinyproxy> {
    let Some(binary) = tinyproxy_binary() else {
        eprintln!("skipped: no `tinyproxy` binary (apt-get install tinyproxy; CI installs it)");
        return None;
    };
    // The port is free when picked but not held: another server may take it first, and then
    // tinyproxy exits; pick another.
    for _ in 0..5 {
        if let Some(proxy) = start_tinyproxy_on(&binary, free_port()) {
            return Some(proxy);
        }
    }
    panic!("tinyproxy exited at start on five ports");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// tinyproxy listening on `port`; None if it exited (the port was taken).
fn start_tinyproxy_on(binary: &std::path::Path, port: u16) -> Option<Tinyproxy> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tinyproxy.conf");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 50\nAllow 127.0.0.1\n\
             BasicAuth {USER} {PASSWORD}\nViaProxyName \"tinyproxy\"\nLogLevel Connect\n"
        ),
    )
    .unwrap();
    let child = Command::new(binary)
        .arg("-d")
        .arg("-c")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tinyproxy");
    let mut proxy = Tinyproxy {
        child,
        port,
        _dir: dir,
    };
    // Until it listens; the bound is generous, as a loaded machine may start it slowly.
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < give_up {
        if proxy.child.try_wait().expect("poll tinyproxy").is_some() {
            return None;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(proxy);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("tinyproxy did not start listening on {port}");
}

fn completion() -> Value {
    json!({
        "id": "gen-1", "object": "chat.completion", "model": "test/model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "through the proxy"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    })
}

/// A plain HTTP server answering every request with [`completion`]; returns its port and the
/// request heads it saw.
async fn http_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let heads = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let heads = heads.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let len = head
                            .to_ascii_lowercase()
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:").map(str::to_string))
                            .map_or(0, |v| v.trim().parse::<usize>().unwrap_or(0));
                        if buf.len() >= end + 4 + len {
                            buf.drain(..end + 4 + len);
                            heads.lock().unwrap().push(head);
                            let body = completion().to_string();
                            let answer = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            );
                            if socket.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        }
                    }
                    match socket.read(&mut tmp).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                }
            });
        }
    });
    (port, seen)
}

/// A TLS server for `localhost` (HTTP/2 or HTTP/1.1 by ALPN) answering with [`completion`];
/// returns its port and how many requests it answered.
async fn tls_server() -> (u16, Arc<Mutex<usize>>) {
    let cert = std::fs::read(Path::new(TLS_DIR).join("server.pem")).unwrap();
    let key = std::fs::read(Path::new(TLS_DIR).join("server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(&cert).unwrap()],
            PrivateKeyDer::from_pem_slice(&key).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let answered = Arc::new(Mutex::new(0usize));
    let count = answered.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, count) = (acceptor.clone(), count.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let count = count.clone();
                        async move {
                            let _ = request.into_body().collect().await;
                            *count.lock().unwrap() += 1;
                            let mut response = hyper::Response::new(Full::new(Bytes::from(
                                completion().to_string(),
                            )));
                            response.headers_mut().insert(
                                "content-type",
                                hyper::header::HeaderValue::from_static("application/json"),
                            );
                            Ok::<_, std::convert::Infallible>(response)
                        }
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
    (port, answered)
}

fn client(proxies: Proxies) -> Client {
    Client::new(ClientConfig {
        proxies,
        extra_ca_pem: Some(std::fs::read(Path::new(TLS_DIR).join("ca.pem")).unwrap()),
        ..ClientConfig::default()
    })
    .unwrap()
}

fn endpoint(base_url: String) -> Endpoint {
    Endpoint {
        name: "test".into(),
        base_url,
        api_key: None,
        weight: 1,
    }
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(30),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    }
}

fn body() -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(&json!({"model": "test/model", "messages": []})).unwrap()
}

/// `http://` targets: absolute-form requests to the proxy, with its credentials; wrong
/// credentials are the proxy's 407, and its password is in no error.
#[tokio::test]
async fn http_targets_go_through_the_proxy_in_absolute_form() {
    let Some(proxy) = start_tinyproxy() else {
        return;
    };
    let (port, heads) = http_server().await;
    let base_url = format!("http://127.0.0.1:{port}/v1");
    // A client per request: tinyproxy serves one request per connection and closes it without
    // saying so (no `Connection: close`), so a second request on one client could be written to
    // the pooled connection before its close arrives (on a loaded machine), which the client
    // reports instead of sending again (tests/resend.rs).
    let new_client = || client(Proxies::from_rules("", &proxy.url(PASSWORD), "", ""));
    for _ in 0..2 {
        let outcome = new_client()
            .chat(&endpoint(base_url.clone()), &body(), &timeouts())
            .await
            .unwrap();
        assert_eq!(outcome.response, completion());
    }
    let heads_seen = heads.clone();
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2);
    for head in &heads {
        // tinyproxy forwards in origin form and says so in `Via`.
        assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("via: 1.1 tinyproxy (tinyproxy/"),
            "{head}"
        );
    }

    // The proxy refuses (tinyproxy answers 401 with an HTML page, others 407): the request never
    // left it, and that is the proxy's credentials, not a bad API key.
    let wrong = client_err(&proxy, base_url).await;
    assert!(matches!(wrong.http_status, Some(401 | 407)), "{wrong}");
    assert_eq!(wrong.class, ErrorClass::ProxyAuth, "{wrong}");
    assert!(wrong.message.contains("proxy"), "{}", wrong.message);
    assert_eq!(heads_len(&heads_seen), 2);

    // A target that refuses connections behind a working proxy: tinyproxy answers 500 "Unable
    // to connect", a server error the retry policy retries.
    let closed = common::servers::refused_port();
    let err = new_client()
        .chat(
            &endpoint(format!("http://127.0.0.1:{}/v1", closed.port)),
            &body(),
            &timeouts(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::ServerError, "{err}");
    assert!(err.class.is_transient());
}

/// A proxy that answers everything with 407 (as Squid does without credentials).
async fn proxy_wanting_credentials() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"proxy\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    port
}

/// A 407 is the proxy's refusal, for plain targets (absolute form) and for CONNECT tunnels alike:
/// its own class, a message that names the proxy (never a password), and the run stops (every
/// request would get the same).
#[tokio::test]
async fn a_407_is_the_proxys_refusal_not_a_bad_api_key() {
    let port = proxy_wanting_credentials().await;
    let url = format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}");
    for (rules, target) in [
        (
            Proxies::from_rules("", &url, "", ""),
            "http://127.0.0.1:9/v1",
        ),
        (
            Proxies::from_rules("", "", &url, ""),
            "https://localhost:9/v1",
        ),
    ] {
        let err = client(rules)
            .chat(&endpoint(target.to_string()), &body(), &timeouts())
            .await
            .unwrap_err();
        let shown = format!("{err} {err:?}");
        assert_eq!(err.class, ErrorClass::ProxyAuth, "{target}: {shown}");
        assert!(!err.class.is_transient());
        assert!(shown.contains(&format!("127.0.0.1:{port}")), "{shown}");
        assert!(!shown.contains(PASSWORD), "{shown}");
    }
}

fn heads_len(heads: &Mutex<Vec<String>>) -> usize {
    heads.lock().unwrap().len()
}

async fn client_err(proxy: &Tinyproxy, base_url: String) -> draftgen::api::ApiError {
    let secure = base_url.starts_with("https");
    let url = proxy.url("wrong-password");
    let rules = if secure {
        Proxies::from_rules("", "", &url, "")
    } else {
        Proxies::from_rules("", &url, "", "")
    };
    let err = client(rules)
        .chat(&endpoint(base_url), &body(), &timeouts())
        .await
        .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains("wrong-password") && !shown.contains(PASSWORD),
        "{shown}"
    );
    err
}

/// `https://` targets: a CONNECT tunnel through the proxy, TLS (and HTTP/2) inside it.
#[tokio::test]
async fn https_targets_go_through_a_connect_tunnel() {
    let Some(proxy) = start_tinyproxy() else {
        return;
    };
    let (port, answered) = tls_server().await;
    let base_url = format!("https://localhost:{port}/v1");
    let client = client(Proxies::from_rules("", "", &proxy.url(PASSWORD), ""));
    for _ in 0..3 {
        let outcome = client
            .chat(&endpoint(base_url.clone()), &body(), &timeouts())
            .await
            .unwrap();
        assert_eq!(outcome.response, completion());
    }
    assert_eq!(*answered.lock().unwrap(), 3);

    // The tunnel really is the proxy's: without its credentials there is none. tinyproxy refuses
    // a CONNECT with 401, not 407, which hyper-util's tunnel does not tell apart from any other
    // refusal (a 407 is `proxy_auth`: the test above): a connect failure, retried.
    let wrong = client_err(&proxy, base_url).await;
    assert_eq!(wrong.class, ErrorClass::Network, "{wrong}");
    assert!(wrong.message.contains("proxy"), "{}", wrong.message);

    // A refused CONNECT (proxy up, target refused): a connect failure, retried by the policy.
    let closed = common::servers::refused_port();
    let err = client
        .chat(
            &endpoint(format!("https://localhost:{}/v1", closed.port)),
            &body(),
            &timeouts(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network, "{err}");
    assert!(err.class.is_transient());
    assert!(err.message.contains("CONNECT"), "{}", err.message);
}

/// `generate` takes its proxy from the environment (`HTTP_PROXY` with credentials), and the
/// password appears nowhere in its output or the run directory.
#[test]
fn generate_honours_http_proxy_from_the_environment() {
    let Some(proxy) = start_tinyproxy() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (port, heads) = rt.block_on(http_server());
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    std::fs::write(
        &prompts,
        r#"{"id":"p1","source":"test","messages":[{"role":"user","content":"hi"}]}"#.to_string()
            + "\n",
    )
    .unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        "[request]\nmodel = \"test/model\"\nmax_tokens = 8\n[retry]\nmax_attempts = 1\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = Command::new(BIN)
        .args(["generate", "--prompts"])
        .arg(&prompts)
        .arg("--run")
        .arg(&run)
        .arg("--config")
        .arg(&config)
        .args(["--base-url", &format!("http://127.0.0.1:{port}/v1")])
        .args(["--progress", "plain"])
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTP_PROXY", proxy.url(PASSWORD))
        .env("DRAFTGEN_LOG", "debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{output}");
    assert!(!output.contains(PASSWORD), "{output}");
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{output}");
    assert!(heads[0]
        .to_ascii_lowercase()
        .contains("via: 1.1 tinyproxy (tinyproxy/"));
    for entry in walk(&run) {
        let text = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains(PASSWORD),
            "{}",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A CONNECT proxy that takes `delay` to open each tunnel (as a slow corporate proxy does).
async fn slow_tunnel_proxy(delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let target = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string();
                let port = target.rsplit(':').next().unwrap_or_default().to_string();
                tokio::time::sleep(delay).await;
                let Ok(mut upstream) =
                    tokio::net::TcpStream::connect(format!("127.0.0.1:{port}")).await
                else {
                    return;
                };
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    port
}

/// The first-byte timeout runs from the request being written: a connect (here a tunnel) that
/// takes longer than it does not use it up.
#[tokio::test]
async fn the_first_byte_timeout_does_not_include_the_connect() {
    let (port, answered) = tls_server().await;
    // The tunnel takes longer than the first-byte limit, which leaves the server (in this
    // process) time to answer on a loaded machine.
    let proxy = slow_tunnel_proxy(Duration::from_millis(4000)).await;
    let client = client(Proxies::from_rules(
        "",
        "",
        &format!("http://127.0.0.1:{proxy}"),
        "",
    ));
    let timeouts = Timeouts {
        connect: Duration::from_secs(30),
        first_byte: Duration::from_secs(3),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    };
    let outcome = client
        .chat(
            &endpoint(format!("https://localhost:{port}/v1")),
            &body(),
            &timeouts,
        )
        .await
        .unwrap();
    assert_eq!(outcome.response, completion());
    assert_eq!(*answered.lock().unwrap(), 1);
}
