//! `draftgen generate` end to end: the binary against a small fault-injecting OpenAI-compatible
//! server that lives in this test process (so it survives the `generate` process being killed).
//!
//! Each test checks the run's invariants from two independent sources: `summary.json` and the
//! journal lines themselves.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use common::run::{journal, text};
use common::servers::{serve, start_sim};
use rand::Rng;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");
const FAKE_KEY: &str = "sk-or-v1-FAKEKEY-5f3a9c0e7d21b8461e2fa9d0c3b7e6a1";
const COST: f64 = 0.001;
const RETRY_AFTER_S: u64 = 1;

// ---------------------------------------------------------------- test server

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fault {
    RateLimited,
    ServerError,
    Unavailable,
    ErrorIn200,
    Empty,
    Malformed,
    Truncated,
    Hang,
    /// 400 whose body echoes the Authorization header (some servers do).
    BadRequestEcho,
}

#[derive(Debug, Clone, Default)]
struct Behaviour {
    faults: Vec<(Fault, f64)>,
    latency_ms: (u64, u64),
    /// Answer every chat request with this status (401, 402).
    force_status: Option<u16>,
    /// Put the Authorization header into every error body and the key endpoint's answer.
    echo_auth: bool,
    credit_remaining: Option<f64>,
}

#[derive(Default)]
struct Server {
    behaviour: Mutex<Behaviour>,
    requests: AtomicU64,
}

struct TestServer {
    base_url: String,
    state: Arc<Server>,
}

impl TestServer {
    fn start(behaviour: Behaviour) -> TestServer {
        let state = Arc::new(Server {
            behaviour: Mutex::new(behaviour),
            requests: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
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

    /// Chat requests received so far.
    fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }
}

/// Wait until the server has received `n` chat requests in all; false if `child` exited first.
/// The bound only keeps a broken run from hanging the suite.
fn wait_for_requests(server: &TestServer, child: &mut std::process::Child, n: u64) -> bool {
    let give_up = Instant::now() + Duration::from_secs(300);
    while server.requests() < n {
        if child.try_wait().expect("poll generate").is_some() {
            return false;
        }
        assert!(
            Instant::now() < give_up,
            "the server saw {} of {n} requests in 5 minutes",
            server.requests()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

fn auth(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn error_body(code: u16, message: &str, b: &Behaviour, headers: &HeaderMap) -> Value {
    let message = if b.echo_auth {
        format!("{message} (you sent Authorization: {})", auth(headers))
    } else {
        message.to_string()
    };
    json!({"error": {"code": code, "message": message}})
}

async fn key(State(s): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let b = s.behaviour.lock().unwrap().clone();
    if let Some(status) = b.force_status {
        let body = error_body(status, "key check refused", &b, &headers);
        return (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    }
    let label = if b.echo_auth {
        auth(&headers)
    } else {
        "test".into()
    };
    axum::Json(json!({"data": {"label": label, "limit": null,
        "limit_remaining": b.credit_remaining, "usage": 0.0}}))
    .into_response()
}

async fn chat(State(s): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    s.requests.fetch_add(1, Ordering::Relaxed);
    let b = s.behaviour.lock().unwrap().clone();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (fault, delay) = {
        let mut rng = rand::rng();
        let x: f64 = rng.random();
        let mut acc = 0.0;
        let mut fault = None;
        for (f, rate) in &b.faults {
            acc += rate;
            if x < acc {
                fault = Some(*f);
                break;
            }
        }
        let (lo, hi) = b.latency_ms;
        (fault, rng.random_range(lo..=hi.max(lo)))
    };
    tokio::time::sleep(Duration::from_millis(delay)).await;
    if let Some(status) = b.force_status {
        let msg = match status {
            401 => "No auth credentials found",
            402 => "Insufficient credits",
            _ => "forced",
        };
        let body = error_body(status, msg, &b, &headers);
        return (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    }
    let json_status = |status: u16, body: Value| -> Response {
        (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
    };
    match fault {
        Some(Fault::RateLimited) => {
            let mut r = json_status(429, error_body(429, "Rate limit exceeded", &b, &headers));
            r.headers_mut()
                .insert("retry-after", RETRY_AFTER_S.to_string().parse().unwrap());
            r
        }
        Some(Fault::ServerError) => json_status(500, error_body(500, "internal", &b, &headers)),
        Some(Fault::Unavailable) => {
            json_status(503, error_body(503, "no provider available", &b, &headers))
        }
        Some(Fault::ErrorIn200) => json_status(
            200,
            error_body(502, "upstream provider error", &b, &headers),
        ),
        Some(Fault::BadRequestEcho) => {
            json_status(400, error_body(400, "invalid request", &b, &headers))
        }
        Some(Fault::Empty) => json_status(200, answer(&request, "", None)),
        Some(Fault::Malformed) => (
            StatusCode::OK,
            [("content-type", "application/json")],
            "{\"id\": \"x\", \"choices\": [",
        )
            .into_response(),
        Some(Fault::Truncated) => {
            let full = answer(&request, "a truncated answer", None).to_string();
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                full[..full.len() / 2].to_string(),
            )
                .into_response()
        }
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            json_status(200, answer(&request, "too late", None))
        }
        None => {
            let text = format!("answer to {}", request["messages"][0]["content"]);
            json_status(200, answer(&request, &text, Some("thinking…")))
        }
    }
}

fn answer(request: &Value, content: &str, reasoning: Option<&str>) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if let Some(r) = reasoning {
        message["reasoning"] = json!(r);
    }
    json!({
        "id": "gen-1", "object": "chat.completion", "model": request["model"],
        "provider": "TestProvider",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19, "cost": COST}
    })
}

// ---------------------------------------------------------------- helpers

/// `n` prompts with distinct ids.
fn write_prompts(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let path = dir.join("prompts.jsonl");
    let mut text = String::new();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!(
            "{:016x}",
            0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)
        );
        text.push_str(
            &json!({"id": id, "source": "test",
                    "messages": [{"role": "user", "content": format!("question {i}")}]})
            .to_string(),
        );
        text.push('\n');
        ids.push(id);
    }
    std::fs::write(&path, text).unwrap();
    (path, ids)
}

/// A config with short timeouts and quick retries.
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
first_byte_s = 1
idle_s = 1
total_s = 2
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

fn generate(prompts: &Path, run: &Path, config: &Path, base_url: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["generate", "--prompts"])
        .arg(prompts)
        .arg("--run")
        .arg(run)
        .arg("--config")
        .arg(config)
        .args([
            "--base-url",
            base_url,
            "--progress",
            "plain",
            "--progress-every",
            "0.2",
        ])
        .args(extra)
        .env_remove("OPENROUTER_API_KEY")
        .env("DRAFTGEN_LOG", "debug")
        .stdin(Stdio::null());
    cmd
}

fn run_to_end(mut cmd: Command) -> Output {
    cmd.output().expect("spawn draftgen")
}

fn summary(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// Per prompt: (successes, last record).
fn by_prompt(records: &[Value]) -> HashMap<String, (usize, Value)> {
    let mut map: HashMap<String, (usize, Value)> = HashMap::new();
    for r in records {
        let id = r["id"].as_str().unwrap().to_string();
        let entry = map.entry(id).or_insert((0, Value::Null));
        if r["status"] == "success" {
            entry.0 += 1;
        }
        entry.1 = r.clone();
    }
    map
}

fn is_transient(class: &str) -> bool {
    matches!(
        class,
        "timeout"
            | "rate_limited"
            | "server_error"
            | "network"
            | "mid_stream"
            | "error_in200"
            | "error_in_200"
            | "empty_answer"
            | "malformed"
    )
}

/// The journal and summary agree, and every attempted prompt is succeeded, failed or skipped.
fn check_accounting(run: &Path, ids: &[String]) -> (usize, usize) {
    let records = journal(run);
    let per = by_prompt(&records);
    let s = summary(run);
    let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
    assert!(
        per.keys().all(|id| known.contains(id.as_str())),
        "a record for an unknown id"
    );
    let mut succeeded = 0;
    let mut failed = 0;
    for (id, (successes, last)) in &per {
        assert!(
            *successes <= 1,
            "prompt {id} has {successes} success records"
        );
        if *successes == 1 {
            succeeded += 1;
        } else {
            assert_eq!(last["status"], "failed", "{id}: {last}");
            assert!(
                last["error_class"].is_string(),
                "{id}: failure without class: {last}"
            );
            failed += 1;
        }
    }
    assert_eq!(s["succeeded"].as_u64().unwrap() as usize, succeeded, "{s}");
    assert_eq!(s["failed"].as_u64().unwrap() as usize, failed, "{s}");
    assert_eq!(
        s["succeeded"].as_u64().unwrap()
            + s["failed"].as_u64().unwrap()
            + s["skipped"].as_u64().unwrap(),
        s["total"].as_u64().unwrap(),
        "{s}"
    );
    assert_eq!(s["total"].as_u64().unwrap() as usize, per.len(), "{s}");
    assert_eq!(
        s["attempts"].as_u64().unwrap() as usize,
        records.len(),
        "{s}"
    );
    (succeeded, failed)
}

// ---------------------------------------------------------------- tests

#[test]
fn kill_9_at_random_moments_then_resume_loses_and_duplicates_nothing() {
    let server = TestServer::start(Behaviour {
        // Each session is killed once the server has seen 5-30 of its requests (see below), so
        // six sessions send at most ~200 of the 300 prompts' requests: every kill lands mid-run
        // however fast or slow the machine is.
        latency_ms: (100, 300),
        faults: vec![(Fault::ServerError, 0.05), (Fault::RateLimited, 0.02)],
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (prompts, ids) = write_prompts(dir.path(), 300);
    let config = write_config(dir.path(), 8);
    let run = dir.path().join("run");
    let mut rng = rand::rng();
    let mut kills = 0;
    let mut sessions = 0;
    while kills < 6 && sessions < 30 {
        sessions += 1;
        let mut child = generate(
            &prompts,
            &run,
            &config,
            &server.base_url,
            &["--concurrency", "8"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        // Kill on an event (this session's requests reaching the server), not after a time: a
        // time races the run's own pace, which load and the concurrency ramp change.
        let seen = server.requests() + rng.random_range(5..30);
        if !wait_for_requests(&server, &mut child, seen) {
            break; // the session ended on its own
        }
        // A little more, so kills land at varied points of answering and journaling.
        std::thread::sleep(Duration::from_millis(rng.random_range(0..50)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
    }
    assert!(
        kills >= 5,
        "only {kills} kills landed before the run finished"
    );
    // Resume until done.
    let out = run_to_end(generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "4", "--json"],
    ));
    let final_summary: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let (succeeded, failed) = check_accounting(&run, &ids);
    assert_eq!(succeeded + failed, ids.len(), "{}", text(&out));
    // 5% + 2% transient faults with 8 attempts: every prompt succeeds.
    assert_eq!(succeeded, ids.len(), "{}", text(&out));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(final_summary["stop"]["reason"], "completed");
    assert_eq!(final_summary["not_started"], 0);
}

#[test]
fn fault_storms_complete_with_consistent_accounting_and_honour_retry_after() {
    let storms: Vec<(&str, Vec<(Fault, f64)>)> = vec![
        ("rate_limited", vec![(Fault::RateLimited, 0.3)]),
        (
            "server_error",
            vec![(Fault::ServerError, 0.25), (Fault::Unavailable, 0.25)],
        ),
        ("error_in_200", vec![(Fault::ErrorIn200, 0.3)]),
        ("empty", vec![(Fault::Empty, 0.3)]),
        (
            "malformed",
            vec![(Fault::Malformed, 0.25), (Fault::Truncated, 0.25)],
        ),
        ("hang", vec![(Fault::Hang, 0.2)]),
        (
            "mixed",
            vec![
                (Fault::RateLimited, 0.1),
                (Fault::ServerError, 0.1),
                (Fault::ErrorIn200, 0.1),
                (Fault::Empty, 0.1),
                (Fault::Malformed, 0.1),
                (Fault::BadRequestEcho, 0.05),
            ],
        ),
    ];
    let server = TestServer::start(Behaviour {
        latency_ms: (1, 5),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (prompts, ids) = write_prompts(dir.path(), 200);
    let config = write_config(dir.path(), 6);
    let mut classes_seen = BTreeMap::new();
    for (name, faults) in storms {
        server.set(|b| b.faults = faults.clone());
        let run = dir.path().join(format!("run-{name}"));
        let out = run_to_end(generate(
            &prompts,
            &run,
            &config,
            &server.base_url,
            &["--concurrency", "64", "--json"],
        ));
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name}: {}",
            text(&out)
        );
        let (succeeded, failed) = check_accounting(&run, &ids);
        assert_eq!(
            succeeded + failed,
            ids.len(),
            "{name}: every prompt attempted"
        );
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s["stop"]["reason"], "completed", "{name}");
        assert_eq!(s["not_started"], 0, "{name}");

        let records = journal(&run);
        for r in &records {
            if let Some(c) = r["error_class"].as_str() {
                *classes_seen.entry(c.to_string()).or_insert(0u64) += 1;
            }
        }
        // A failed prompt's last failure is transient (retries used up) unless the server said 400.
        for (id, (successes, last)) in by_prompt(&records) {
            if successes == 0 {
                let class = last["error_class"].as_str().unwrap();
                assert!(
                    is_transient(class) || class == "bad_request",
                    "{name} {id}: {last}"
                );
            }
        }
        // Retry-After: the next attempt of a prompt after a 429 starts at least that much later.
        let mut last_start: HashMap<String, (chrono::DateTime<chrono::FixedOffset>, bool)> =
            HashMap::new();
        let mut checked = 0;
        let mut sorted = records.clone();
        sorted.sort_by_key(|r| (r["id"].as_str().unwrap().to_string(), r["attempt"].as_u64()));
        for r in &sorted {
            let id = r["id"].as_str().unwrap().to_string();
            let start =
                chrono::DateTime::parse_from_rfc3339(r["started_at"].as_str().unwrap()).unwrap();
            if let Some((prev, was_429)) = last_start.get(&id) {
                if *was_429 {
                    let gap = start.signed_duration_since(*prev);
                    assert!(
                        gap >= chrono::Duration::seconds(RETRY_AFTER_S as i64),
                        "{name} {id}: retried {gap} after a 429 with Retry-After {RETRY_AFTER_S}s"
                    );
                    checked += 1;
                }
            }
            last_start.insert(id, (start, r["http_status"] == 429));
        }
        if name == "rate_limited" {
            assert!(
                checked > 10,
                "only {checked} retries after a 429 were checked"
            );
        }
    }
    for class in [
        "rate_limited",
        "server_error",
        "error_in200",
        "empty_answer",
        "malformed",
        "timeout",
        "bad_request",
    ] {
        let alt = class.replace("error_in200", "error_in_200");
        assert!(
            classes_seen.contains_key(class) || classes_seen.contains_key(&alt),
            "class {class} never recorded: {classes_seen:?}"
        );
    }
}

#[test]
fn budget_stop_leaves_a_consistent_journal_and_a_bigger_budget_finishes() {
    let server = TestServer::start(Behaviour {
        latency_ms: (5, 15),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (prompts, ids) = write_prompts(dir.path(), 200);
    let config = write_config(dir.path(), 4);
    let run = dir.path().join("run");
    let out = run_to_end(generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "4", "--max-cost-usd", "0.05", "--json"],
    ));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["stop"]["reason"], "budget", "{s}");
    let (succeeded, failed) = check_accounting(&run, &ids);
    assert_eq!(failed, 0);
    let cost = summary(&run)["cost_usd"].as_f64().unwrap();
    // The cap holds up to what was already in flight when it was reached.
    assert!(cost <= 0.05 + 4.0 * COST + 1e-9, "spent {cost}");
    assert!((40..200).contains(&succeeded), "succeeded {succeeded}");
    assert!(s["not_started"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-cost-usd"));

    let out = run_to_end(generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "4", "--max-cost-usd", "10"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (succeeded, _) = check_accounting(&run, &ids);
    assert_eq!(succeeded, ids.len());
}

fn assert_no_key_anywhere(run: &Path, outputs: &[&Output]) {
    for o in outputs {
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("FAKEKEY"),
            "key in stdout"
        );
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("FAKEKEY"),
            "key in stderr"
        );
    }
    let mut stack = vec![run.to_path_buf()];
    let mut files = 0;
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            files += 1;
            let bytes = std::fs::read(&p).unwrap();
            let hay = String::from_utf8_lossy(&bytes);
            assert!(!hay.contains("FAKEKEY"), "key in {}", p.display());
        }
    }
    assert!(files >= 3, "run dir has {files} files");
}

#[test]
fn api_key_never_reaches_files_or_output_even_when_echoed() {
    let server = TestServer::start(Behaviour {
        latency_ms: (1, 5),
        faults: vec![
            (Fault::BadRequestEcho, 0.2),
            (Fault::ServerError, 0.2),
            (Fault::RateLimited, 0.05),
        ],
        echo_auth: true,
        credit_remaining: Some(100.0),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (prompts, _ids) = write_prompts(dir.path(), 100);
    let config = write_config(dir.path(), 3);

    // Key from the environment, OpenRouter kind (so the key endpoint is asked too).
    let run_env = dir.path().join("run-env");
    let mut cmd = generate(
        &prompts,
        &run_env,
        &config,
        &server.base_url,
        &["--kind", "openrouter", "--json"],
    );
    cmd.env("OPENROUTER_API_KEY", FAKE_KEY);
    let out_env = run_to_end(cmd);
    assert!(
        matches!(out_env.status.code(), Some(0 | 1)),
        "{}",
        text(&out_env)
    );
    let records = journal(&run_env);
    assert!(
        records.iter().any(|r| r["error"]
            .as_str()
            .is_some_and(|e| e.contains("[REDACTED]"))),
        "the server echoed the header; the journal should show it redacted"
    );

    // Key from a file.
    let key_file = dir.path().join("key.txt");
    std::fs::write(&key_file, format!("{FAKE_KEY}\n")).unwrap();
    let run_file = dir.path().join("run-file");
    let out_file = run_to_end(generate(
        &prompts,
        &run_file,
        &config,
        &server.base_url,
        &["--api-key-file", key_file.to_str().unwrap(), "--json"],
    ));
    assert!(
        matches!(out_file.status.code(), Some(0 | 1)),
        "{}",
        text(&out_file)
    );

    // A 401 that echoes the key in its message: the error output names the class, not the key.
    server.set(|b| b.force_status = Some(401));
    let run_401 = dir.path().join("run-401");
    let out_401 = run_to_end(generate(
        &prompts,
        &run_401,
        &config,
        &server.base_url,
        &["--api-key-file", key_file.to_str().unwrap()],
    ));
    assert_eq!(out_401.status.code(), Some(1), "{}", text(&out_401));
    // And the same through the OpenRouter key check at start.
    let mut cmd = generate(
        &prompts,
        &dir.path().join("run-401-or"),
        &config,
        &server.base_url,
        &["--kind", "openrouter"],
    );
    cmd.env("OPENROUTER_API_KEY", FAKE_KEY);
    let out_401_or = run_to_end(cmd);
    assert_eq!(out_401_or.status.code(), Some(1), "{}", text(&out_401_or));

    assert_no_key_anywhere(&run_env, &[&out_env]);
    assert_no_key_anywhere(&run_file, &[&out_file]);
    assert_no_key_anywhere(&run_401, &[&out_401, &out_401_or]);
    let _ = std::fs::remove_file(&key_file);
}

#[test]
fn unauthorized_and_payment_required_stop_the_run_and_resume_retries_them() {
    for (status, hint) in [(401u16, "OPENROUTER_API_KEY"), (402u16, "credits")] {
        let server = TestServer::start(Behaviour {
            latency_ms: (1, 5),
            force_status: Some(status),
            ..Behaviour::default()
        });
        let dir = tempfile::tempdir().unwrap();
        let (prompts, ids) = write_prompts(dir.path(), 200);
        let config = write_config(dir.path(), 5);
        let run = dir.path().join("run");
        let out = run_to_end(generate(
            &prompts,
            &run,
            &config,
            &server.base_url,
            &["--concurrency", "4", "--json"],
        ));
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&status.to_string()) && stderr.contains(hint),
            "{stderr}"
        );
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s["stop"]["reason"], "fatal", "{s}");
        let records = journal(&run);
        assert!(
            !records.is_empty() && records.len() < 200,
            "stopped early: {} records",
            records.len()
        );
        // A fatal class is not retried within the session.
        let per = by_prompt(&records);
        assert_eq!(per.len(), records.len());
        check_accounting(&run, &ids);

        // Fixed key / credit: the resume retries the prompts that got 401/402.
        server.set(|b| b.force_status = None);
        let out = run_to_end(generate(
            &prompts,
            &run,
            &config,
            &server.base_url,
            &["--concurrency", "4"],
        ));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let (succeeded, _) = check_accounting(&run, &ids);
        assert_eq!(succeeded, ids.len());
    }
}

#[test]
fn streaming_storm_against_the_simulator_then_resume_retries_what_ran_out() {
    use draftgen::sim::{FaultRates, Flavor, SimConfig};
    // Every simulator fault class at 20% (scaled together to 90% of attempts): most prompts run
    // out of attempts in one session, and the next session retries exactly those.
    let sim = start_sim(SimConfig {
        flavor: Flavor::OpenRouter,
        // The run's model must be in the model list (an unlisted id stops the run).
        model_name: "test/model".into(),
        seed: 11,
        faults: FaultRates::all(0.2),
        hang: Duration::from_secs(30),
        retry_after_secs: 1,
        ..SimConfig::default()
    });
    let base_url = sim.base_url();
    let dir = tempfile::tempdir().unwrap();
    let (prompts, ids) = write_prompts(dir.path(), 100);
    let config = write_config(dir.path(), 8);
    let run = dir.path().join("run");
    let session = || {
        let mut cmd = generate(
            &prompts,
            &run,
            &config,
            &base_url,
            &[
                "--kind",
                "openrouter",
                "--concurrency",
                "32",
                "--stream",
                "--json",
            ],
        );
        cmd.env("OPENROUTER_API_KEY", FAKE_KEY);
        run_to_end(cmd)
    };
    let first = session();
    assert!(
        matches!(first.status.code(), Some(0 | 1)),
        "{}",
        text(&first)
    );
    let s: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(s["stop"]["reason"], "completed");
    let (succeeded_1, failed_1) = check_accounting(&run, &ids);
    assert_eq!(succeeded_1 + failed_1, ids.len());
    assert!(succeeded_1 >= 20, "only {succeeded_1} succeeded");
    // Costs come from the simulator's usage.cost.
    assert!(summary(&run)["cost_usd"].as_f64().unwrap() > 0.0);
    let classes: HashSet<String> = journal(&run)
        .iter()
        .filter_map(|r| r["error_class"].as_str().map(str::to_string))
        .collect();
    for class in [
        "rate_limited",
        "server_error",
        "timeout",
        "mid_stream",
        "malformed",
        "empty_answer",
    ] {
        assert!(classes.contains(class), "{class} not seen: {classes:?}");
    }

    let before: HashMap<String, usize> = by_prompt(&journal(&run))
        .into_iter()
        .map(|(id, (s, _))| (id, s))
        .collect();
    let second = session();
    assert!(
        matches!(second.status.code(), Some(0 | 1)),
        "{}",
        text(&second)
    );
    let (succeeded_2, _) = check_accounting(&run, &ids);
    assert!(succeeded_2 > succeeded_1, "{succeeded_1} -> {succeeded_2}");
    // Prompts that had succeeded got no new record.
    let after = journal(&run);
    let first_len: usize = before.len();
    assert!(first_len == ids.len());
    let succeeded_before: HashSet<&String> = before
        .iter()
        .filter(|(_, s)| **s == 1)
        .map(|(id, _)| id)
        .collect();
    let per_after = by_prompt(&after);
    for id in succeeded_before {
        assert_eq!(per_after[id].0, 1, "{id}");
    }
    assert_no_key_anywhere(&run, &[&first, &second]);
}

#[test]
fn ctrl_c_stops_scheduling_lets_in_flight_finish_and_writes_the_summary() {
    let server = TestServer::start(Behaviour {
        latency_ms: (200, 300),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let (prompts, ids) = write_prompts(dir.path(), 200);
    let config = write_config(dir.path(), 3);
    let run = dir.path().join("run");
    let mut child = generate(
        &prompts,
        &run,
        &config,
        &server.base_url,
        &["--concurrency", "8", "--json"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Interrupt once the run is under way (its signal handler set, answers coming back: the
    // limiter only ramps to 8 in flight on answers), not after a fixed time, which a loaded
    // machine can spend before the first request.
    assert!(
        wait_for_requests(&server, &mut child, 8),
        "generate ended before it was interrupted"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["stop"]["reason"], "interrupted", "{s}");
    assert!(s["not_started"].as_u64().unwrap() > 0);
    let (succeeded, failed) = check_accounting(&run, &ids);
    assert_eq!(
        failed, 0,
        "in-flight requests finished instead of being cut"
    );
    assert!(succeeded > 0);
    // Nothing in flight was abandoned: every request the server saw that finished was journaled.
    assert!(String::from_utf8_lossy(&out.stderr).contains("resume"));
}

/// A prompt's own `max_tokens` goes out in its request when it is below the run's, and is lowered
/// to the run's when above (the budget bounds each request by the run's); the journal records the
/// limit each request was sent with, which `build` reads to tell a cut from a finished answer.
#[test]
fn a_prompts_own_max_tokens_is_sent_never_above_the_runs() {
    use draftgen::sim::SimConfig;
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(SimConfig::default());
    let base_url = sim.base_url();
    let prompts = dir.path().join("prompts.jsonl");
    let lines = [
        json!({"id": "low", "source": "test", "messages": [{"role": "user", "content": "a"}],
               "request_options": {"max_tokens": 5}}),
        json!({"id": "high", "source": "test", "messages": [{"role": "user", "content": "b"}],
               "request_options": {"max_tokens": 100000}}),
        json!({"id": "run", "source": "test", "messages": [{"role": "user", "content": "c"}]}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&prompts, body).unwrap();
    let run = dir.path().join("run");
    let config = write_config(dir.path(), 3);
    let out = run_to_end(generate(&prompts, &run, &config, &base_url, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("1 prompt(s) ask for more than the run's max_tokens (64)"),
        "{}",
        text(&out)
    );
    let sent: HashMap<String, Value> = journal(&run)
        .into_iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["request"]["max_tokens"].clone(),
            )
        })
        .collect();
    assert_eq!(sent["low"], 5);
    assert_eq!(sent["high"], 64);
    assert_eq!(sent["run"], 64);
}
