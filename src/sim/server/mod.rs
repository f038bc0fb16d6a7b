//! The HTTP side: axum routes ([`chat`] for the chat completions, [`account`] for the rest),
//! graceful shutdown, and [`spawn`] for in-process use. A request's answer is one
//! [`Turn`](flavor::Turn) ([`turn`]), sent as the flavour's body or events ([`reply`]).
//!
//! Every request does a little work on its own task (write an answer, tokenize a few hundred
//! tokens) and shares only immutable state, atomics and a sharded attempt map, so the server
//! keeps up with 10,000 concurrent connections. Hang faults wait on the shutdown signal as well
//! as their timer, so shutting down never waits for them.

mod account;
mod chat;
mod errors;
mod listen;
mod reply;
mod turn;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, HeaderMap};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use listen::{listen, LISTEN_BACKLOG};

use super::attempts::Attempts;
use super::capacity::{Capacity, CapacitySnapshot};
use super::config::SimConfig;
use super::counters::{CounterSnapshot, Counters};
use super::flavor::{self, Event};
use super::request::ChatRequest;
use super::routing;
use super::tokens::TokenCounter;
use super::SimError;
use turn::{make_turn, Written};

struct Shared {
    config: SimConfig,
    tokens: TokenCounter,
    counters: Arc<Counters>,
    capacity: Option<Arc<Capacity>>,
    attempts: Attempts,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    /// `require_key`: any `Authorization: Bearer <something>` passes; the key itself is never
    /// read further, logged or echoed.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        if !self.config.require_key {
            return true;
        }
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|key| !key.trim().is_empty())
    }

    /// Wait for the configured hang time, or until shutdown.
    async fn hang(&self) {
        let mut shutdown = self.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(self.config.hang) => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    }
}

/// A configured simulator, not yet listening.
pub struct Simulator {
    shared: Arc<Shared>,
    shutdown_tx: watch::Sender<bool>,
}

impl Simulator {
    /// Load the tokenizer (if `model_dir` is set) and prepare the state.
    pub fn new(config: SimConfig) -> Result<Self, SimError> {
        let tokens = TokenCounter::load(
            config.model_dir.as_deref(),
            config.profile.as_deref(),
            config.chat_template.as_deref(),
        )
        .map_err(|source| SimError::Model {
            dir: config
                .model_dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            source,
        })?;
        let (shutdown_tx, shutdown) = watch::channel(false);
        let capacity = config.capacity.map(|c| Arc::new(Capacity::new(c)));
        Ok(Simulator {
            shared: Arc::new(Shared {
                config,
                tokens,
                counters: Arc::new(Counters::default()),
                capacity,
                attempts: Attempts::default(),
                shutdown,
            }),
            shutdown_tx,
        })
    }

    /// The live counters (shared with the running server).
    pub fn counters(&self) -> Arc<Counters> {
        self.shared.counters.clone()
    }

    /// The capacity model's state, if the simulator has one.
    pub fn capacity(&self) -> Option<Arc<Capacity>> {
        self.shared.capacity.clone()
    }

    /// Serve on `listener` until `shutdown` completes; in-flight answers finish, hangs are cut.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), SimError> {
        let router = router(self.shared.clone());
        let shutdown_tx = self.shutdown_tx;
        // Small SSE frames must not wait on Nagle's algorithm.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                // Wake every hanging request so the graceful shutdown does not wait for them.
                let _ = shutdown_tx.send(true);
            })
            .await
            .map_err(SimError::Serve)
    }
}

/// Serve `config` on `listener` until `shutdown` completes.
pub async fn serve(
    config: SimConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    Simulator::new(config)?.serve(listener, shutdown).await
}

/// A simulator running on its own task; shut down on [`SimHandle::shutdown`] or drop.
pub struct SimHandle {
    addr: SocketAddr,
    counters: Arc<Counters>,
    capacity: Option<Arc<Capacity>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), SimError>>>,
}

impl SimHandle {
    /// `http://127.0.0.1:PORT/v1`: the OpenAI-compatible base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// What the capacity model saw (admitted, turned away, peak in flight), if there is one.
    pub fn capacity(&self) -> Option<CapacitySnapshot> {
        self.capacity.as_ref().map(|c| c.snapshot())
    }

    /// Stop accepting, let in-flight answers finish, cut hangs, and wait for the server task.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(|e| SimError::Task(e.to_string()))?,
            None => Ok(()),
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Bind `127.0.0.1:0`, start serving on a new task, and return its address and counters.
pub async fn spawn(config: SimConfig) -> Result<SimHandle, SimError> {
    let listener = listen("127.0.0.1", 0).await.map_err(SimError::Bind)?;
    let addr = listener.local_addr().map_err(SimError::Bind)?;
    let simulator = Simulator::new(config)?;
    let counters = simulator.counters();
    let capacity = simulator.capacity();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(simulator.serve(listener, async move {
        let _ = stopped.await;
    }));
    Ok(SimHandle {
        addr,
        counters,
        capacity,
        stop: Some(stop),
        task: Some(task),
    })
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/api/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/models", get(account::models))
        .route("/api/v1/models", get(account::models))
        .route(
            "/api/v1/models/{author}/{slug}/endpoints",
            get(account::model_endpoints),
        )
        .route(
            "/v1/models/{author}/{slug}/endpoints",
            get(account::model_endpoints),
        )
        .route("/api/v1/key", get(account::key_info))
        .route("/api/v1/auth/key", get(account::key_info))
        .route("/v1/auth/key", get(account::key_info))
        .route("/v1/key", get(account::key_info))
        .route("/api/v1/credits", get(account::credits))
        .route("/v1/credits", get(account::credits))
        .route("/health", get(account::health))
        .with_state(shared)
}

/// What the simulator sends for one chat request: the body, or the stream's events.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    Body(Value),
    Events(Vec<Event>),
}

impl Simulator {
    /// What `POST /v1/chat/completions` answers to the request `body` when the model wrote
    /// `completion_ids` (the end-of-turn id last unless `max_tokens` cut it) instead of its own
    /// answer: the same request reading, sampling, counting, routing to a named provider (its
    /// conventions too; one that is down is passed over as a served request would) and flavour
    /// as a served answer, without faults or pacing. It lets a test send a known token stream
    /// through a flavour and compare with what a real server's code sent for it
    /// (`tests/sim_vs_servers.rs`). Needs a tokenizer (`model_dir`).
    pub fn answer_with(&self, body: &Value, completion_ids: &[u32]) -> Result<Answered, String> {
        let shared = &self.shared;
        if !shared.tokens.has_tokenizer() {
            return Err("sim: answering given ids needs a tokenizer (model_dir)".to_string());
        }
        let request = ChatRequest::from_json(body)?;
        let key = request.key();
        let provider = self.routed(&request, key)?;
        let turn = make_turn(
            shared,
            &request,
            key,
            0,
            Written::Given(completion_ids),
            provider,
        );
        Ok(if request.stream {
            Answered::Events(flavor::events(&turn))
        } else {
            Answered::Body(flavor::response(&turn))
        })
    }

    /// The ids the simulated model saw and wrote answering the request `body` as it is served
    /// (routed to a named provider and under its conventions: a generated reasoning opener is
    /// the completion's first id, not the prompt's last), without faults: `(prompt_ids,
    /// completion_ids)`, the end-of-turn id last unless cut. What a test holds a run's rebuilt
    /// samples to. Needs a tokenizer (`model_dir`).
    pub fn sampled(&self, body: &Value) -> Result<(Vec<u32>, Vec<u32>), String> {
        let request = ChatRequest::from_json(body)?;
        let key = request.key();
        let provider = self.routed(&request, key)?;
        let turn = make_turn(&self.shared, &request, key, 0, Written::Own, provider);
        match (turn.prompt_token_ids, turn.token_ids) {
            (Some(prompt), Some(completion)) => Ok((prompt, completion)),
            _ => Err("sim: the sampled ids need a tokenizer (model_dir)".to_string()),
        }
    }

    /// The named provider a served request is answered by (`None`: the simulator itself).
    fn routed(
        &self,
        request: &ChatRequest,
        key: u64,
    ) -> Result<Option<&super::providers::NamedProvider>, String> {
        let tried = routing::candidates(&self.shared.config.providers, &request.routing, key)
            .map_err(|routing::NoProvider(message)| message)?;
        Ok(tried.into_iter().find(|p| !p.down))
    }
}
