//! Servers a test runs in its own process, each on a runtime thread of its own: the `draftgen`
//! processes the test starts are other processes, and a server must outlive each of them (one
//! killed mid-run included), whatever the test thread is doing.

use std::net::SocketAddr;

use draftgen::sim::{SimConfig, SimHandle};

/// A runtime for one server's thread: two workers, so a slow handler never holds up the rest.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for a test server")
}

/// The built-in simulator (`draftgen::sim::spawn`); it serves until the handle is dropped.
pub fn start_sim(config: SimConfig) -> SimHandle {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            // The handle goes to the test; this thread keeps the runtime the sim runs on.
            let _ = tx.send(draftgen::sim::spawn(config).await);
            std::future::pending::<()>().await;
        });
    });
    rx.recv()
        .expect("the simulator's thread")
        .unwrap_or_else(|e| panic!("the simulator did not start: {e}"))
}

/// Serve `app` on a free loopback port for the rest of the test process; returns its
/// OpenAI-style base URL (`http://127.0.0.1:PORT/v1`).
pub fn serve(app: axum::Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind a loopback port");
            let addr = listener.local_addr().expect("the bound address");
            let _ = tx.send(addr);
            axum::serve(listener, app).await.expect("the test server");
        });
    });
    let addr = rx.recv().expect("the test server's thread");
    format!("http://{addr}/v1")
}

/// A loopback port where nothing listens, held for as long as the value lives: the socket is
/// bound but never listening, so a connection is refused and no other process can take the port
/// meanwhile (a port bound and let go may be taken by any server on the machine).
pub struct RefusedPort {
    _socket: socket2::Socket,
    pub port: u16,
}

pub fn refused_port() -> RefusedPort {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .expect("a TCP socket");
    let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
    socket.bind(&any_port.into()).expect("bind a loopback port");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("the bound address")
        .port();
    RefusedPort {
        _socket: socket,
        port,
    }
}
