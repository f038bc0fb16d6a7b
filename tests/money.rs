//! `draftgen generate` where money and time are at stake, end to end against the binary: the
//! budget across sessions, `Retry-After` across a resume, prompts files with bad lines, and the
//! early stop when nothing works.
//!
//! The test server lives in this process (so it outlives each `generate` session) and logs every
//! chat request with the prompt it carried and the time it arrived.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use common::run::{journal, text};
use common::servers::{refused_port, serve, start_sim};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

// ---------------------------------------------------------------- test server

#[derive(Debug, Clone, Default)]
struct Behaviour {
    /// `usage.cost` of every answer.
    cost: f64,
    /// Answer 429 with this `Retry-After` (seconds) to every request for these prompt contents.
    rate_limit: Vec<(String, u64)>,
    latency_ms: u64,
    /// Answers carry no `usage.cost` (a provider that does not report it).
    omit_cost: bool,
    /// The `provider` every answer names.
    provider: Option<String>,
    /// The `GET /models` answer (404 when `None`).
    models: Option<Value>,
    /// The key's `limit_remaining` in `GET /key` (404 when `None`).
    credit_remaining: Option<f64>,
}

#[derive(Default)]
struct Server {
    behaviour: Mutex<Behaviour>,
    /// (arrival time, first message content) of every chat request.
    log: Mutex<Vec<(SystemTime, String)>>,
}

struct TestServer {
    base_url: String,
    state: Arc<Server>,
}

impl TestServer {
    fn start(behaviour: Behaviour) -> TestServer {
        let state = Arc::new(Server {
            behaviour: Mutex::new(behaviour),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .route("/v1/key", get(key))
            .with_state(state.clone());
        TestServer {
            base_url: serve(app),
            state,
        }
    }

    fn set(&self, f: impl FnOnce(&mut Behaviour)) {
        f(&mut self.state.behaviour.lock().unwrap());
    }

    fn requests(&self) -> Vec<(SystemTime, String)> {
        self.state.log.lock().unwrap().clone()
    }
}

async fn models(State(s): State<Arc<Server>>) -> Response {
    match s.behaviour.lock().unwrap().models.clone() {
        Some(list) => axum::Json(list).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn key(State(s): State<Arc<Server>>) -> Response {
    match s.behaviour.lock().unwrap().credit_remaining {
        Some(left) => {
            axum::Json(json!({"data": {"limit_remaining": left, "usage": 0.0}})).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn chat(State(s): State<Arc<Server>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let content = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    s.log
        .lock()
        .unwrap()
        .push((SystemTime::now(), content.clone()));
    let b = s.behaviour.lock().unwrap().clone();
    tokio::time::sleep(Duration::from_millis(b.latency_ms)).await;
    if let Some((_, secs)) = b.rate_limit.iter().find(|(c, _)| *c == content) {
        let body = json!({"error": {"code": 429, "message": "Rate limit exceeded"}});
        let mut r = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
        r.headers_mut()
            .insert("retry-after", secs.to_string().parse().unwrap());
        return r;
    }
    let mut answer = json!({
        "id": "gen-1", "object": "chat.completion", "model": request["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("answer to {content}")},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19, "cost": b.cost}
    });
    if b.omit_cost {
        answer["usage"].as_object_mut().unwrap().remove("cost");
    }
    if let Some(provider) = b.provider {
        answer["provider"] = json!(provider);
    }
    axum::Json(answer).into_response()
}

// ---------------------------------------------------------------- helpers

fn prompt_line(i: usize) -> String {
    let id = format!(
        "{:016x}",
        0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)
    );
    json!({"id": id, "source": "test",
           "messages": [{"role": "user", "content": format!("question {i}")}]})
    .to_string()
}

fn write_prompts(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("prompts.jsonl");
    let text: String = (0..n).map(|i| prompt_line(i) + "\n").collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn write_config(dir: &Path, max_attempts: u32) -> PathBuf {
    let path = dir.join("run.toml");
    std::fs::write(
        &path,
        format!(
            r#"grace_s = 5
[request]
model = "test/model"
max_tokens = 64
[timeouts]
connect_s = 2
first_byte_s = 2
idle_s = 2
total_s = 4
[retry]
max_attempts = {max_attempts}
base_ms = 10
cap_s = 0.1
"#
        ),
    )
    .unwrap();
    path
}

fn generate(prompts: &Path, run: &Path, config: &Path, base_url: &str, extra: &[&str]) -> Output {
    generate_showing(prompts, run, config, base_url, extra, "none")
}

/// [`generate`] with `--progress PROGRESS` (`plain` also shows what is said at start).
fn generate_showing(
    prompts: &Path,
    run: &Path,
    config: &Path,
    base_url: &str,
    extra: &[&str],
    progress: &str,
) -> Output {
    Command::new(BIN)
        .args(["generate", "--prompts"])
        .arg(prompts)
        .arg("--run")
        .arg(run)
        .arg("--config")
        .arg(config)
        .args(["--base-url", base_url, "--progress", progress, "--json"])
        .args(extra)
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("spawn draftgen")
}

fn summary_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

// ---------------------------------------------------------------- early stop

#[test]
fn a_dead_port_stops_early_naming_the_first_error_and_the_run_resumes() {
    // A port where nothing listens, held for the test.
    let refused = refused_port();
    let dead = format!("http://127.0.0.1:{}/v1", refused.port);
    let dir = tempfile::tempdir().unwrap();
    let n = 300;
    let prompts = write_prompts(dir.path(), n);
    let config = write_config(dir.path(), 4);
    let run = dir.path().join("run");
    let out = generate(&prompts, &run, &config, &dead, &["--concurrency", "16"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s = summary_json(&out);
    assert_eq!(s["stop"]["reason"], "unreachable", "{s}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped early"), "{stderr}");
    let first = s["stop"]["first_error"].as_str().unwrap();
    assert!(first.contains(&refused.port.to_string()), "{first}");
    assert!(stderr.contains(first), "the first error verbatim: {stderr}");
    assert!(s["first_errors"]["network"].is_string(), "{s}");
    // Far fewer attempts than 300 prompts x 4 attempts: the threshold plus what was in flight.
    let records = journal(&run);
    assert!(
        records.len() <= 16 * 4 + 8,
        "{} attempts before stopping",
        records.len()
    );

    // Fixed (a server on the port would do; here another address): everything runs.
    let server = TestServer::start(Behaviour::default());
    let out = generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "16", "--force"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(summary_json(&out)["summary"]["succeeded"], n as u64);
}

#[test]
fn not_found_everywhere_stops_early_and_a_fixed_run_retries_those_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(Behaviour::default());
    let wrong = server.base_url.replace("/v1", "/wrong/v1");
    let prompts = write_prompts(dir.path(), 100);
    let config = write_config(dir.path(), 2);
    let run = dir.path().join("run");
    let out = generate(&prompts, &run, &config, &wrong, &["--concurrency", "4"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s = summary_json(&out);
    assert_eq!(s["stop"]["reason"], "unreachable", "{s}");
    assert!(
        s["stop"]["first_error"].as_str().unwrap().contains("404"),
        "{s}"
    );
    assert!(journal(&run).len() < 30);

    let out = generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "4", "--force"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(summary_json(&out)["summary"]["succeeded"], 100);
}

// ---------------------------------------------------------------- bad lines

#[test]
fn bad_prompt_lines_are_reported_and_skipped_and_the_rest_runs_unless_strict() {
    let server = TestServer::start(Behaviour::default());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prompts.jsonl");
    let mut lines: Vec<String> = (0..20).map(prompt_line).collect();
    lines[2] = "{\"id\": \"x\", \"messages\": [".to_string();
    lines[11] = "{\"id\": 7}".to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let config = write_config(dir.path(), 2);

    let run = dir.path().join("strict");
    let out = generate(&path, &run, &config, &server.base_url, &["--strict"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("prompts.jsonl:3:"),
        "{}",
        text(&out)
    );
    assert!(server.requests().is_empty(), "--strict sends nothing");

    let run = dir.path().join("run");
    let out = generate(&path, &run, &config, &server.base_url, &[]);
    // Something the user gave did not run: not a clean exit.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for n in [3, 12] {
        assert!(
            stderr.contains(&format!("prompts.jsonl:{n}: not a prompt record, skipped")),
            "line {n}: {stderr}"
        );
    }
    let s = summary_json(&out);
    assert_eq!(s["summary"]["succeeded"], 18, "{s}");
    let skipped = s["summary"]["skipped_lines"].as_array().unwrap();
    let at: Vec<u64> = skipped
        .iter()
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [3, 12]);
    assert!(skipped
        .iter()
        .all(|l| !l["reason"].as_str().unwrap().is_empty()));
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(on_disk["skipped_lines"], s["summary"]["skipped_lines"]);
    assert_eq!(server.requests().len(), 18);
}

// ---------------------------------------------------------------- budget across sessions

fn cost_of_run(run: &Path) -> f64 {
    journal(run)
        .iter()
        .filter_map(|r| r["cost_usd"].as_f64())
        .sum()
}

#[test]
fn a_resume_with_little_headroom_stays_under_the_cap() {
    const COST: f64 = 0.001;
    let server = TestServer::start(Behaviour {
        cost: COST,
        latency_ms: 5,
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 300);
    let config = write_config(dir.path(), 2);
    let run = dir.path().join("run");

    let out = generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "8", "--max-cost-usd", "0.05"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(summary_json(&out)["stop"]["reason"], "budget");
    let spent = cost_of_run(&run);
    // Requests in flight hold a reservation each: together they cannot cross the cap.
    assert!(spent <= 0.05 + 1e-9, "first session spent {spent}");
    assert!(spent >= 0.05 - COST - 1e-9, "and used what it had: {spent}");

    // About three requests of headroom, many slots: the journal's cost per request (not zero
    // until three answers of this session are back) bounds what is sent.
    let before = server.requests().len();
    let cap = spent + 3.0 * COST + COST / 10.0;
    let cap_arg = format!("{cap}");
    let out = generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "64", "--max-cost-usd", &cap_arg],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(summary_json(&out)["stop"]["reason"], "budget");
    let sent = server.requests().len() - before;
    assert_eq!(sent, 3, "three requests of headroom");
    let total = cost_of_run(&run);
    assert!(total <= cap + 1e-9, "run spent {total} over the cap {cap}");
}

#[test]
fn before_any_answer_the_published_price_bounds_a_request() {
    use draftgen::sim::SimConfig;
    let sim = start_sim(SimConfig::default());
    let base_url = sim.base_url();
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 20);
    let config = write_config(dir.path(), 2);
    let key = dir.path().join("key");
    std::fs::write(&key, "sk-or-v1-test\n").unwrap();
    let run = dir.path().join("run");
    // 64 completion tokens at the sim's $2.50 per million alone cost $0.00016: nothing fits
    // $0.0001, and nothing may be sent to find that out.
    let mut extra = vec![
        "--kind",
        "openrouter",
        "--max-cost-usd",
        "0.0001",
        "--model",
        "moonshotai/kimi-k2.5:exacto",
        "--api-key-file",
    ];
    let key_arg = key.to_string_lossy().to_string();
    extra.push(&key_arg);
    let out = generate(&prompts, &run, &config, &base_url, &extra);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s = summary_json(&out);
    assert_eq!(s["stop"]["reason"], "budget", "{s}");
    assert_eq!(s["summary"]["attempts"], 0, "{s}");

    // Room for a few: the run spends up to the cap, never past it.
    let run = dir.path().join("run2");
    extra[3] = "0.001";
    let out = generate(&prompts, &run, &config, &base_url, &extra);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let spent = cost_of_run(&run);
    assert!(spent > 0.0 && spent <= 0.001 + 1e-12, "spent {spent}");
}

// ---------------------------------------------------------------- Retry-After across a resume

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn retry_after_holds_across_a_resume() {
    let server = TestServer::start(Behaviour {
        rate_limit: vec![("question 0".into(), 2), ("question 1".into(), 3)],
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 6);
    // One attempt per session: the 429 ends the prompt's session, the resume sends the next one.
    let config = write_config(dir.path(), 1);
    let run = dir.path().join("run");
    let out = generate(&prompts, &run, &config, &server.base_url, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let not_before: Vec<(String, u64)> = journal(&run)
        .iter()
        .filter(|r| r["error_class"] == "rate_limited")
        .map(|r| {
            let content = r["request"]["messages"][0]["content"].as_str().unwrap();
            (
                content.to_string(),
                r["not_before_ms"].as_u64().expect("journaled"),
            )
        })
        .collect();
    assert_eq!(not_before.len(), 2, "{not_before:?}");

    // The server has recovered; resume at once.
    server.set(|b| b.rate_limit.clear());
    let out = generate(&prompts, &run, &config, &server.base_url, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = server.requests();
    for (content, not_before) in &not_before {
        let sent: Vec<u64> = log
            .iter()
            .filter(|(_, c)| c == content)
            .map(|(t, _)| unix_ms(*t))
            .collect();
        assert_eq!(sent.len(), 2, "{content}: {sent:?}");
        assert!(
            sent[1] >= *not_before,
            "{content}: next attempt at {} ms, before the journaled not-before {not_before} ms",
            sent[1]
        );
        // And the journaled time is the server's Retry-After after the first attempt.
        assert!(
            *not_before >= sent[0] + 1900,
            "{content}: {not_before} vs {}",
            sent[0]
        );
    }
}

// ---------------------------------------------------------------- one cost accounting

/// An OpenRouter model list with `test/model` at $1 / $2 per million prompt / completion tokens.
fn priced_list() -> Value {
    json!({"data": [
        {"id": "test/model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
        {"id": "test/other-model", "pricing": {"prompt": "0.000003", "completion": "0.000004"}}
    ]})
}

fn openrouter_args(key: &Path) -> Vec<String> {
    vec![
        "--kind".into(),
        "openrouter".into(),
        "--api-key-file".into(),
        key.to_string_lossy().into_owned(),
    ]
}

fn key_file(dir: &Path) -> PathBuf {
    let key = dir.join("key");
    std::fs::write(&key, "sk-or-v1-test\n").unwrap();
    key
}

fn summary_file(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn answers_without_usage_cost_are_priced_from_the_published_price_with_or_without_a_cap() {
    let server = TestServer::start(Behaviour {
        omit_cost: true,
        provider: Some("NoCostCloud".into()),
        models: Some(priced_list()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 10);
    let config = write_config(dir.path(), 2);
    let args = openrouter_args(&key_file(dir.path()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Each answer: 12 prompt tokens at $1/M + 7 completion tokens at $2/M (the listed price).
    let each = 12.0 * 1e-6 + 7.0 * 2e-6;
    let mut costs = Vec::new();
    for (name, cap) in [("uncapped", None), ("capped", Some("1.0"))] {
        let run = dir.path().join(name);
        let mut extra = args.clone();
        if let Some(cap) = cap {
            extra.extend(["--max-cost-usd", cap]);
        }
        let out = generate(&prompts, &run, &config, &server.base_url, &extra);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let s = summary_json(&out)["summary"].clone();
        let cost = s["cost_usd"].as_f64().unwrap();
        assert!((cost - 10.0 * each).abs() < 1e-12, "{name}: {s}");
        assert_eq!(s["estimated_cost_usd"], s["cost_usd"], "{name}: {s}");
        let by_provider = s["by_provider"].as_array().unwrap();
        assert_eq!(by_provider.len(), 1, "{s}");
        assert_eq!(by_provider[0]["provider"], "NoCostCloud");
        assert_eq!(by_provider[0]["attempts"], 10);
        assert_eq!(by_provider[0]["estimated_cost_usd"], s["cost_usd"]);
        assert_eq!(summary_file(&run)["by_provider"], s["by_provider"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("estimated"), "{stderr}");
        assert!(stderr.contains("provider NoCostCloud"), "{stderr}");
        costs.push(cost);
    }
    assert_eq!(
        costs[0], costs[1],
        "one accounting whether or not a cap is set"
    );
}

#[test]
fn reported_costs_are_not_estimated_and_sum_per_provider_across_sessions() {
    let server = TestServer::start(Behaviour {
        cost: 0.001,
        provider: Some("Alpha".into()),
        models: Some(priced_list()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 2);
    let args = openrouter_args(&key_file(dir.path()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = dir.path().join("run");
    let out = generate(
        &write_prompts(dir.path(), 4),
        &run,
        &config,
        &server.base_url,
        &args,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // A second session on more prompts answered by another provider that reports no cost.
    server.set(|b| {
        b.provider = Some("Beta".into());
        b.omit_cost = true;
    });
    // More prompts: a changed dataset, so --force.
    let more = [&args[..], &["--force"]].concat();
    let out = generate(
        &write_prompts(dir.path(), 6),
        &run,
        &config,
        &server.base_url,
        &more,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary_json(&out)["summary"].clone();
    let by: Vec<(String, u64, f64, f64)> = s["by_provider"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["provider"].as_str().unwrap().to_string(),
                f["attempts"].as_u64().unwrap(),
                f["cost_usd"].as_f64().unwrap(),
                f["estimated_cost_usd"].as_f64().unwrap(),
            )
        })
        .collect();
    let beta = 2.0 * (12.0 * 1e-6 + 7.0 * 2e-6);
    assert_eq!(by.len(), 2, "{s}");
    assert_eq!((by[0].0.as_str(), by[0].1, by[0].3), ("Alpha", 4, 0.0));
    assert!((by[0].2 - 0.004).abs() < 1e-12, "{s}");
    assert_eq!((by[1].0.as_str(), by[1].1), ("Beta", 2));
    assert!(
        (by[1].2 - beta).abs() < 1e-12 && (by[1].3 - beta).abs() < 1e-12,
        "{s}"
    );
    assert!(
        (s["estimated_cost_usd"].as_f64().unwrap() - beta).abs() < 1e-12,
        "{s}"
    );
    assert_eq!(s["by_provider_complete"], true, "{s}");
}

#[test]
fn the_projection_gives_an_expected_figure_beside_the_worst_case() {
    let server = TestServer::start(Behaviour {
        cost: 0.0001,
        models: Some(priced_list()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 2);
    let args = openrouter_args(&key_file(dir.path()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = dir.path().join("run");
    let out = generate(
        &write_prompts(dir.path(), 5),
        &run,
        &config,
        &server.base_url,
        &args,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let p = summary_json(&out)["projection"].clone();
    let (expected, worst) = (
        p["expected_usd"].as_f64().unwrap(),
        p["worst_case_usd"].as_f64().unwrap(),
    );
    // max_tokens 64 at $2/M: each answer at the limit costs 64 x 2e-6 in completion; the
    // expected answer is a stated quarter of it (16 tokens) before any answer is seen.
    let prompt_part = worst - 5.0 * 64.0 * 2e-6;
    assert!(prompt_part > 0.0, "{p}");
    assert!(
        (expected - (prompt_part + 5.0 * 16.0 * 2e-6)).abs() < 1e-12,
        "{p}"
    );
    assert!(p["basis"].as_str().unwrap().contains("25%"), "{p}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at most"), "{stderr}");

    // Five answers of $0.0001 seen: the resume's 5 new prompts are expected to cost 5 x that.
    let more = [&args[..], &["--force"]].concat();
    let out = generate(
        &write_prompts(dir.path(), 10),
        &run,
        &config,
        &server.base_url,
        &more,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let p = summary_json(&out)["projection"].clone();
    assert!(
        (p["expected_usd"].as_f64().unwrap() - 0.0005).abs() < 1e-12,
        "{p}"
    );
    assert!(p["worst_case_usd"].as_f64().unwrap() >= 0.0005, "{p}");
    assert!(p["basis"].as_str().unwrap().contains("mean cost"), "{p}");
}

#[test]
fn a_model_the_endpoint_does_not_list_stops_before_anything_is_sent() {
    let server = TestServer::start(Behaviour {
        models: Some(priced_list()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 5);
    let config = write_config(dir.path(), 2);
    let mut args = openrouter_args(&key_file(dir.path()));
    args.extend(["--model".into(), "test/modle".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = generate(
        &prompts,
        &dir.path().join("run"),
        &config,
        &server.base_url,
        &args,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("test/modle"), "{stderr}");
    assert!(
        stderr.contains("closest ids it lists: test/model"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");

    // Against the simulator standing in for OpenRouter: its list has moonshotai/kimi-k2.5.
    let sim = draftgen_sim();
    let out = generate(
        &prompts,
        &dir.path().join("run-sim"),
        &config,
        &sim.base_url(),
        &[&args[..4], &["--model", "moonshot/kimi-k2.5"]].concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("moonshotai/kimi-k2.5"), "{stderr}");
    assert!(
        !dir.path().join("run-sim").exists(),
        "no run directory is left to resume with the wrong id"
    );
}

fn draftgen_sim() -> draftgen::sim::SimHandle {
    start_sim(draftgen::sim::SimConfig::default())
}

// ---------------------------------------------------------------- failures attributed

/// `generate` against a simulator whose provider "Dead" is down, routed by `provider.only`
/// without fallbacks (with them, the sim, like OpenRouter, answers from another listed provider).
fn run_pinned(only: &str) -> (Value, String) {
    let providers = ["Alive:vllm", "Dead:vllm:down"]
        .iter()
        .map(|spec| spec.parse().unwrap())
        .collect();
    let sim = start_sim(draftgen::sim::SimConfig {
        model_name: "test/model".into(),
        providers,
        ..draftgen::sim::SimConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 20);
    let config = write_config(dir.path(), 2);
    let text_of = std::fs::read_to_string(&config).unwrap();
    let routed = text_of.replace(
        "max_tokens = 64\n",
        &format!("max_tokens = 64\nprovider = {{ only = {only}, allow_fallbacks = false }}\n"),
    );
    std::fs::write(&config, routed).unwrap();
    let args = openrouter_args(&key_file(dir.path()));
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--concurrency", "2"]);
    let out = generate(
        &prompts,
        &dir.path().join("run"),
        &config,
        &sim.base_url(),
        &args,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    (
        summary_json(&out)["summary"].clone(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn failures_of_a_pinned_provider_that_never_answered_are_attributed_and_not_called_retryable() {
    let (s, stderr) = run_pinned(r#"["Dead"]"#);
    let failed = s["failed"].as_u64().unwrap();
    assert!(failed > 0, "{s}");
    let by_provider = s["by_provider"].as_array().unwrap();
    assert_eq!(by_provider.len(), 1, "{s}");
    assert_eq!(by_provider[0]["provider"], "Dead", "{s}");
    assert_eq!(by_provider[0]["succeeded_attempts"], 0, "{s}");
    assert_eq!(
        by_provider[0]["failed_attempts"], by_provider[0]["attempts"],
        "{s}"
    );
    assert_eq!(s["retry_blocked"], s["retryable"], "{s}");
    assert!(stderr.contains("(0 retryable on resume;"), "{stderr}");
    assert!(stderr.contains("provider Dead"), "{stderr}");

    // Another provider is allowed: OpenRouter may route a retry there, so it stays retryable.
    let (s, stderr) = run_pinned(r#"["Dead", "Alive"]"#);
    assert!(s["retryable"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["retry_blocked"], 0, "{s}");
    assert!(!stderr.contains("pinned provider"), "{stderr}");
}

#[test]
fn the_credit_check_refuses_on_the_expected_cost_and_warns_on_the_worst_case() {
    let server = TestServer::start(Behaviour {
        cost: 0.00001,
        models: Some(priced_list()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path(), 50);
    let config = write_config(dir.path(), 2);
    let args = openrouter_args(&key_file(dir.path()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Learn the projection (no credit limit).
    let out = generate(
        &prompts,
        &dir.path().join("probe"),
        &config,
        &server.base_url,
        &args,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let p = summary_json(&out)["projection"].clone();
    let expected = p["expected_usd"].as_f64().unwrap();
    let worst = p["worst_case_usd"].as_f64().unwrap();
    assert!(expected < worst, "{p}");

    // Credit between the two: the run goes ahead, warned.
    let between = (expected + worst) / 2.0;
    server.set(|b| b.credit_remaining = Some(between));
    let between_run = dir.path().join("between");
    let out = generate_showing(
        &prompts,
        &between_run,
        &config,
        &server.base_url,
        &args,
        "plain",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("the worst case"), "{}", text(&out));

    // Credit below the expected cost: refused before anything is sent.
    server.set(|b| b.credit_remaining = Some(expected / 2.0));
    let sent = server.requests().len();
    let out = generate(
        &prompts,
        &dir.path().join("below"),
        &config,
        &server.base_url,
        &args,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("credit left"), "{}", text(&out));
    assert_eq!(server.requests().len(), sent);
}
