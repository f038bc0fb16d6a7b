//! Goodput against a provider with finite capacity: draftgen's engine (adaptive concurrency)
//! against a naive client with a fixed semaphore, on the same simulator capacity model (a maximum
//! in flight, `Retry-After: 1` 429s beyond it, a fixed answer latency).
//!
//! ```text
//! cargo run --release --example capacity_bench -- [CAPACITY...]
//! ```
//!
//! A capacity is `SLOTS` (a maximum in flight), `/RPS` (requests per second, a bucket of one
//! second's worth, slots unlimited) or `SLOTS/RPS` (both). For each (default 10 50 200), both
//! clients start 256 requests in flight and run `PROMPTS_PER_SLOT` round trips' worth of the
//! capacity's rate (min(SLOTS / latency, RPS)) in prompts; reported: goodput (successes per
//! second) as a share of that rate, and the share of attempts turned away. The naive client is the
//! seed-style loop: a semaphore of 256, and on a 429 sleep exactly `Retry-After`, then retry.
//!
//! Where the time goes, from the sim's admitted count sampled every 50 ms: `ramp` is when the
//! run first reached 90% of the capacity's rate (over a 0.5 s span), `steady` the rate between
//! 10% and 90% of the prompts admitted (as a share of capacity), `tail` the wall time after 99%
//! were admitted (prompts waiting out a `Retry-After` at the end).
//!
//! Environment: `BENCH_LATENCY_MS` (default 200), `BENCH_PROMPTS_PER_SLOT` (default 100),
//! `BENCH_CLIENTS` (`both`, `draftgen` or `naive`), `BENCH_CAPACITY_HEADERS` (set: the sim
//! advertises its bucket in `X-RateLimit-*` headers, as with `draftgen sim --capacity-headers`), `BENCH_LOG` (a tracing filter, e.g. `draftgen::pacing=debug`: every judged window of
//! the pace on stderr), `BENCH_SIM_URL` (a sim in its own process,
//! started for one capacity and one client; at thousands in flight one process runs out of file
//! descriptors).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use draftgen::api::{Client, ClientConfig, Endpoint, ErrorClass, ServerKind, Timeouts};
use draftgen::config::{Overrides, RunConfig};
use draftgen::dataset::Prompt;
use draftgen::engine::{self, Shutdown};
use draftgen::sim::capacity::sustainable_rps;
use draftgen::sim::{spawn, CapacityConfig, Latency, SimConfig};
use serde_json::json;

const START_IN_FLIGHT: usize = 256;
/// Sampling period of the sim's admitted count.
const SAMPLE: Duration = Duration::from_millis(50);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn latency() -> Duration {
    Duration::from_millis(env_or("BENCH_LATENCY_MS", 200))
}

/// Prompts per unit of capacity: 100 → 100 round trips at full capacity (20 s at 200 ms).
fn prompts_per_slot() -> usize {
    env_or("BENCH_PROMPTS_PER_SLOT", 100) as usize
}

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

/// A capacity of the simulated provider, as given on the command line.
#[derive(Debug, Clone, Copy)]
struct Capacity {
    slots: Option<usize>,
    rps: Option<f64>,
}

impl Capacity {
    /// `SLOTS`, `/RPS` or `SLOTS/RPS`.
    fn parse(arg: &str) -> Option<Capacity> {
        let (slots, rps) = arg.split_once('/').unwrap_or((arg, ""));
        let slots = (!slots.is_empty()).then(|| slots.parse().ok()).flatten();
        let rps = (!rps.is_empty()).then(|| rps.parse().ok()).flatten();
        (slots.is_some() || rps.is_some()).then_some(Capacity { slots, rps })
    }

    fn config(self) -> CapacityConfig {
        CapacityConfig {
            max_in_flight: self.slots,
            rps: self.rps,
            retry_after_secs: 1,
            headers: std::env::var_os("BENCH_CAPACITY_HEADERS").is_some(),
        }
    }

    /// Successes per second the capacity allows.
    fn rate(self) -> f64 {
        sustainable_rps(&self.config(), latency()).unwrap_or(1.0)
    }

    fn label(self) -> String {
        match (self.slots, self.rps) {
            (Some(s), Some(r)) => format!("{s} slots, {r}/s"),
            (Some(s), None) => format!("{s} slots"),
            (None, Some(r)) => format!("{r}/s"),
            (None, None) => "-".into(),
        }
    }
}

fn sim_config(capacity: Capacity) -> SimConfig {
    SimConfig {
        latency: Latency {
            base: latency(),
            per_token: Duration::ZERO,
        },
        capacity: Some(capacity.config()),
        ..SimConfig::default()
    }
}

struct Outcome {
    successes: u64,
    attempts: u64,
    rejected: u64,
    wall: Duration,
    /// (time since start, admitted so far), every [`SAMPLE`].
    samples: Vec<(Duration, u64)>,
}

/// Sample the sim's admitted count until `done` fires.
fn sample(
    sim: Arc<draftgen::sim::SimHandle>,
    mut done: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<Vec<(Duration, u64)>> {
    tokio::spawn(async move {
        let t0 = Instant::now();
        let mut samples = Vec::new();
        let mut tick = tokio::time::interval(SAMPLE);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let admitted = sim.capacity().map_or(0, |c| c.admitted);
                    samples.push((t0.elapsed(), admitted));
                }
                _ = &mut done => return samples,
            }
        }
    })
}

/// One client against a fresh sim, with the admitted count sampled.
async fn measured<F, Fut>(capacity: Capacity, n: usize, client: F) -> Outcome
where
    F: FnOnce(String, usize) -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    // An external sim (`draftgen sim --capacity-max-in-flight C`) halves this process's sockets;
    // the ramp, steady and tail columns need the in-process one.
    if let Ok(url) = std::env::var("BENCH_SIM_URL") {
        return client(url, n).await;
    }
    let sim = Arc::new(spawn(sim_config(capacity)).await.expect("sim"));
    let (stop, done) = tokio::sync::oneshot::channel();
    let sampler = sample(sim.clone(), done);
    let mut outcome = client(sim.base_url(), n).await;
    let _ = stop.send(());
    outcome.samples = sampler.await.unwrap_or_default();
    outcome
}

async fn draftgen_run(base_url: &str, n: usize) -> Outcome {
    let mut config = RunConfig::from_toml(
        r#"[request]
model = "moonshotai/kimi-k2.5"
max_tokens = 32
[concurrency]
min = 1
# above every capacity measured
max = 20000
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
        kind: Some(ServerKind::Generic),
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
        samples: Vec::new(),
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
        samples: Vec::new(),
    }
}

/// When the sampled admitted count first reached `count`.
fn reached(samples: &[(Duration, u64)], count: u64) -> Option<Duration> {
    samples.iter().find(|(_, a)| *a >= count).map(|(t, _)| *t)
}

/// When the rate over half a second first reached `rate` per second.
fn ramp(samples: &[(Duration, u64)], rate: f64) -> Option<Duration> {
    let span = (Duration::from_millis(500).as_millis() / SAMPLE.as_millis()) as usize;
    samples.windows(span + 1).find_map(|w| {
        let (t0, a0) = w[0];
        let (t1, a1) = w[span];
        ((a1 - a0) as f64 / (t1 - t0).as_secs_f64() >= rate).then_some(t0)
    })
}

fn report(name: &str, capacity: Capacity, n: usize, o: &Outcome) -> f64 {
    let capacity_rate = capacity.rate();
    let goodput = o.successes as f64 / o.wall.as_secs_f64();
    let share = goodput / capacity_rate;
    let n = n as u64;
    let steady = match (reached(&o.samples, n / 10), reached(&o.samples, n * 9 / 10)) {
        (Some(a), Some(b)) if b > a => {
            format!(
                "{:.1}%",
                100.0 * (n * 8 / 10) as f64 / (b - a).as_secs_f64() / capacity_rate
            )
        }
        _ => "-".into(),
    };
    let secs = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.1}s", d.as_secs_f64()));
    let tail = reached(&o.samples, n * 99 / 100).map(|t| o.wall.saturating_sub(t));
    println!(
        "| {:>5} | {name:<9} | {:>6} | {:>6.1}s | {:>6.1}/s | {:>5.1}% | {:>5.1}% | {} | {} | {} |",
        capacity.label(),
        o.successes,
        o.wall.as_secs_f64(),
        goodput,
        100.0 * share,
        100.0 * o.rejected as f64 / o.attempts.max(1) as f64,
        secs(ramp(&o.samples, 0.9 * capacity_rate)),
        steady,
        secs(tail),
    );
    share
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `BENCH_LOG=draftgen::pacing=debug`: every judged window of the pace, on stderr.
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let capacities: Vec<Capacity> = std::env::args()
        .skip(1)
        .filter_map(|a| Capacity::parse(&a))
        .collect();
    let capacities = if capacities.is_empty() {
        [10, 50, 200]
            .map(|slots| Capacity {
                slots: Some(slots),
                rps: None,
            })
            .to_vec()
    } else {
        capacities
    };
    let clients = std::env::var("BENCH_CLIENTS").unwrap_or_else(|_| "both".into());
    println!(
        "latency {} ms, {} prompts per unit of capacity, start at {START_IN_FLIGHT} in flight",
        latency().as_millis(),
        prompts_per_slot()
    );
    println!("| capacity | client | ok | wall | goodput | of capacity | attempts rejected | ramp to 90% | steady | tail |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for capacity in capacities {
        let n = (prompts_per_slot() as f64 * capacity.rate() * latency().as_secs_f64()).round()
            as usize;
        let mut shares = Vec::new();
        if clients != "naive" {
            let o = measured(
                capacity,
                n,
                |url, n| async move { draftgen_run(&url, n).await },
            )
            .await;
            shares.push(report("draftgen", capacity, n, &o));
        }
        if clients != "draftgen" {
            let o = measured(
                capacity,
                n,
                |url, n| async move { naive_run(&url, n).await },
            )
            .await;
            shares.push(report("naive", capacity, n, &o));
        }
        if let [a, b] = shares[..] {
            println!(
                "|       | ratio     | draftgen / naive goodput: {:.2} |",
                a / b
            );
        }
    }
}
