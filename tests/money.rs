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
use axum::routing::post;
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
    axum::Json(json!({
        "id": "gen-1", "object": "chat.completion", "model": request["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("answer to {content}")},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19, "cost": b.cost}
    }))
    .into_response()
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
    Command::new(BIN)
        .args(["generate", "--prompts"])
        .arg(prompts)
        .arg("--run")
        .arg(run)
        .arg("--config")
        .arg(config)
        .args(["--base-url", base_url, "--progress", "none", "--json"])
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
