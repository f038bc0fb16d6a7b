//! Goodput against a provider with finite capacity: draftgen's engine (adaptive concurrency)
//! against a naive client with a fixed semaphore, on the same simulator capacity model (a maximum
//! in flight, `Retry-After: 1` 429s beyond it, a fixed answer latency).
//!
//! ```text
//! cargo run --release --example capacity_bench -- [CAPACITY...]
//! ```
//!
//! For each capacity C (default 10 50 200), both clients start 256 requests in flight and run
//! `PROMPTS_PER_SLOT · C` prompts; reported: goodput (successes per second) as a share of the
//! capacity's rate (C / latency), and the share of attempts turned away. The naive client is the
//! seed-style loop: a semaphore of 256, and on a 429 sleep exactly `Retry-After`, then retry.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use draftgen::api::{Client, ClientConfig, Endpoint, ErrorClass, Timeouts};
use draftgen::config::{EndpointKind, Overrides, RunConfig};
use draftgen::dataset::Prompt;
use draftgen::engine::{self, Shutdown};
use draftgen::sim::{spawn, CapacityConfig, Latency, SimConfig};
use serde_json::json;

const LATENCY: Duration = Duration::from_millis(200);
const START_IN_FLIGHT: usize = 256;
/// Prompts per unit of capacity: 100 → about 20 s at full capacity.
const PROMPTS_PER_SLOT: usize = 100;

fn prompts(n: usize) -> Vec<Prompt> {
    (0..n)
        .map(|i| Prompt {
            id: format!(
                "{:016x}",
                0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)
            ),
            source: "bench".into(),
            messages: vec![json!({"role": "user", "content": format!("question {i}")})],
            tools: None,
            meta: serde_json::Value::Null,
            ..Prompt::default()
        })
        .collect()
}

fn sim_config(capacity: usize) -> SimConfig {
    SimConfig {
        latency: Latency {
            base: LATENCY,
            per_token: Duration::ZERO,
        },
        capacity: Some(CapacityConfig {
            max_in_flight: Some(capacity),
            rps: None,
            retry_after_secs: 1,
        }),
        ..SimConfig::default()
    }
}

struct Outcome {
    successes: u64,
    attempts: u64,
    rejected: u64,
    wall: Duration,
}

async fn draftgen_run(base_url: &str, n: usize) -> Outcome {
    let mut config = RunConfig::from_toml(
        r#"[request]
model = "moonshotai/kimi-k2.5"
max_tokens = 32
[concurrency]
min = 1
max = 4096
[retry]
max_attempts = 50
base_ms = 100
cap_s = 2
"#,
        Path::new("bench.toml"),
    )
    .expect("config");
    config.apply(Overrides {
        base_url: Some(base_url.to_string()),
        kind: Some(EndpointKind::Generic),
        concurrency: Some(START_IN_FLIGHT),
        ..Overrides::default()
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let run = engine::run(
        &config,
        prompts(n),
        &dir.path().join("run"),
        Shutdown::new(),
    )
    .await
    .expect("run");
    let wall = t0.elapsed();
    let s = &run.summary;
    Outcome {
        successes: s.succeeded,
        attempts: s.attempts,
        rejected: s
            .attempts_by_error_class
            .get(&ErrorClass::RateLimited)
            .copied()
            .unwrap_or(0),
        wall,
    }
}

async fn naive_run(base_url: &str, n: usize) -> Outcome {
    let client = Arc::new(Client::new(ClientConfig::default()).expect("client"));
    let endpoint = Arc::new(Endpoint {
        name: "sim".into(),
        base_url: base_url.to_string(),
        api_key: None,
        weight: 1,
    });
    let semaphore = Arc::new(tokio::sync::Semaphore::new(START_IN_FLIGHT));
    let (successes, attempts, rejected) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let timeouts = Timeouts {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    };
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for p in prompts(n) {
        let permit = semaphore.clone().acquire_owned().await.expect("semaphore");
        let (client, endpoint) = (client.clone(), endpoint.clone());
        let (successes, attempts, rejected) =
            (successes.clone(), attempts.clone(), rejected.clone());
        tasks.spawn(async move {
            let _permit = permit;
            let body = serde_json::value::to_raw_value(&json!({
                "model": "moonshotai/kimi-k2.5", "max_tokens": 32, "messages": p.messages,
            }))
            .expect("body");
            for _ in 0..50 {
                attempts.fetch_add(1, Ordering::Relaxed);
                match client.chat_raw(&endpoint, &body, &timeouts).await {
                    Ok(_) => {
                        successes.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(e) => {
                        if e.class == ErrorClass::RateLimited {
                            rejected.fetch_add(1, Ordering::Relaxed);
                        }
                        tokio::time::sleep(e.retry_after.unwrap_or(Duration::from_secs(1))).await;
                    }
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Outcome {
        successes: successes.load(Ordering::Relaxed),
        attempts: attempts.load(Ordering::Relaxed),
        rejected: rejected.load(Ordering::Relaxed),
        wall: t0.elapsed(),
    }
}

fn report(name: &str, capacity: usize, o: &Outcome) -> f64 {
    let capacity_rate = capacity as f64 / LATENCY.as_secs_f64();
    let goodput = o.successes as f64 / o.wall.as_secs_f64();
    let share = goodput / capacity_rate;
    println!(
        "| {capacity:>5} | {name:<9} | {:>6} | {:>6.1}s | {:>6.1}/s | {:>5.1}% | {:>5.1}% |",
        o.successes,
        o.wall.as_secs_f64(),
        goodput,
        100.0 * share,
        100.0 * o.rejected as f64 / o.attempts.max(1) as f64,
    );
    share
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let capacities: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let capacities = if capacities.is_empty() {
        vec![10, 50, 200]
    } else {
        capacities
    };
    println!("| capacity | client | ok | wall | goodput | of capacity | attempts rejected |");
    println!("|---|---|---|---|---|---|---|");
    for capacity in capacities {
        let n = PROMPTS_PER_SLOT * capacity;
        let sim = spawn(sim_config(capacity)).await.expect("sim");
        let ours = draftgen_run(&sim.base_url(), n).await;
        drop(sim);
        let sim = spawn(sim_config(capacity)).await.expect("sim");
        let naive = naive_run(&sim.base_url(), n).await;
        drop(sim);
        let a = report("draftgen", capacity, &ours);
        let b = report("naive", capacity, &naive);
        println!(
            "|       | ratio     | draftgen / naive goodput: {:.2} |",
            a / b
        );
    }
}
