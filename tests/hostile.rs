//! A bad answer never poisons a run: `generate` against a deliberately hostile OpenAI-compatible
//! server of this test's own (deep JSON, a huge body, a body whose tree would be huge, a long SSE
//! line, negative cost, usage that is not numbers), streamed and not. Each answer ends in a classified failure or a flagged
//! success, every prompt has a record, and `build` and `verify` read the run. And a full disk:
//! `generate` stops with a clear error, and after space is freed the resume accounts for every
//! prompt, nothing lost or duplicated (on a small tmpfs, where the platform lets the test mount
//! one).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use common::run::{output, text, RunDir, BIN};
use common::servers::serve;
use serde_json::{json, Value};

/// The answer size limit the runs use (`--max-answer-mb`), so the huge answers stay small.
const LIMIT_MB: usize = 1;

/// Nesting of the deep answers: far past any parser's recursion limit.
const DEEP: usize = 100_000;

// ---------------------------------------------------------------- the hostile server

/// Answer a chat request as its first message's content says (the behaviour's name), streamed
/// when the request asks for it.
async fn chat(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let behaviour = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let stream = request["stream"].as_bool().unwrap_or(false);
    let usage =
        json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15, "cost": 0.0001});
    let big = "x".repeat((LIMIT_MB << 20) + 4096);
    // `numbers`: within the size limit, but a tree of it would take 36 times its size (and the
    // empty content makes the client look at it as a tree: not a usable answer).
    let numbers = format!("[{}0]", "0,".repeat((LIMIT_MB << 20) / 2 - 4096));
    let (content, usage, deep) = match behaviour.as_str() {
        "negative_cost" => (
            "fine".to_string(),
            json!({"prompt_tokens": 12, "completion_tokens": 3, "cost": -5}),
            false,
        ),
        "non_numeric_usage" => (
            "fine".to_string(),
            json!({"prompt_tokens": "many", "completion_tokens": 1e30, "cost": 0.0001}),
            false,
        ),
        "deep" => ("fine".to_string(), usage, true),
        "numbers" => (String::new(), usage, false),
        "huge" | "long_line" => (big, usage, false),
        "disk" => ("y".repeat(6000), usage, false),
        _ => ("fine".to_string(), usage, false),
    };
    let extra = match behaviour.as_str() {
        _ if deep => Some(format!("{}1{}", "[".repeat(DEEP), "]".repeat(DEEP))),
        "numbers" => Some(numbers),
        _ => None,
    };
    if stream {
        streamed(&behaviour, content, usage, extra)
    } else {
        let mut text = json!({
            "id": "gen-1", "object": "chat.completion", "model": "m", "provider": "Hostile",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": usage,
        })
        .to_string();
        if let Some(extra) = extra {
            text.pop();
            text.push_str(&format!(",\"extra\":{extra}}}"));
        }
        Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body(Body::from(text))
            .unwrap()
    }
}

/// The answer as SSE: content in 64 KB chunks, or (`long_line`) in one chunk, one line.
fn streamed(behaviour: &str, content: String, usage: Value, extra: Option<String>) -> Response {
    let chunk = |delta: Value, finish: Value, usage: Value| {
        json!({"id": "gen-1", "object": "chat.completion.chunk", "model": "m", "provider": "Hostile",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage})
        .to_string()
    };
    let mut events = vec![chunk(
        json!({"role": "assistant"}),
        Value::Null,
        Value::Null,
    )];
    let piece = if behaviour == "long_line" {
        content.len().max(1)
    } else {
        64 << 10
    };
    for part in content.as_bytes().chunks(piece) {
        let part = String::from_utf8_lossy(part);
        events.push(chunk(json!({"content": part}), Value::Null, Value::Null));
    }
    if let Some(extra) = extra {
        events.push(format!("{{\"choices\":[],\"extra\":{extra}}}"));
    }
    events.push(chunk(json!({}), json!("stop"), usage));
    let mut body = String::new();
    for event in events {
        body.push_str("data: ");
        body.push_str(&event);
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    Response::builder()
        .header(CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

fn hostile_server() -> String {
    serve(Router::new().route("/v1/chat/completions", post(chat)))
}

// ---------------------------------------------------------------- helpers

const BEHAVIOURS: [&str; 7] = [
    "ok",
    "negative_cost",
    "non_numeric_usage",
    "deep",
    "numbers",
    "huge",
    "long_line",
];

/// `per` prompts for each behaviour: `{behaviour} {i}`, ids `{behaviour}-{i}`.
fn prompts(behaviours: &[&str], per: usize) -> Vec<Value> {
    behaviours
        .iter()
        .flat_map(|b| {
            (0..per).map(move |i| {
                json!({"id": format!("{b}-{i}"), "source": "hostile",
                       "messages": [{"role": "user", "content": format!("{b} {i}")}]})
            })
        })
        .collect()
}

fn write_config(dir: &RunDir) -> std::path::PathBuf {
    let path = dir.join("run.toml");
    std::fs::write(
        &path,
        "grace_s = 5\n[timeouts]\nconnect_s = 5\nfirst_byte_s = 20\nidle_s = 20\ntotal_s = 60\n\
         [retry]\nmax_attempts = 3\nbase_ms = 10\ncap_s = 0.1\n\
         [budget]\nprompt_usd_per_mtok = 1.0\ncompletion_usd_per_mtok = 2.0\n",
    )
    .expect("run.toml");
    path
}

fn generate(dir: &RunDir, base_url: &str, stream: bool) -> Output {
    let mut cmd = dir.generate(base_url);
    cmd.args(["--kind", "generic", "--model", "m", "--concurrency", "4"])
        .args(["--max-answer-mb", &LIMIT_MB.to_string()])
        .arg("--config")
        .arg(write_config(dir));
    if stream {
        cmd.arg("--stream");
    }
    output(&mut cmd)
}

/// The journal's records by prompt id, in journal order.
fn records_by_id(dir: &RunDir) -> BTreeMap<String, Vec<Value>> {
    let mut by_id: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for record in dir.journal() {
        let id = record["id"].as_str().expect("an id").to_string();
        by_id.entry(id).or_default().push(record);
    }
    by_id
}

fn smollm2() -> std::path::PathBuf {
    common::assets().join("smollm2-135m-instruct")
}

// ---------------------------------------------------------------- the tests

fn hostile_run(stream: bool) {
    let server = hostile_server();
    let dir = RunDir::new();
    let per = 2;
    dir.write_prompts(prompts(&BEHAVIOURS, per));
    let out = generate(&dir, &server, stream);
    // Some prompts fail for good: exit 1, never a crash.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("panicked"), "{}", text(&out));
    // The first provider whose usage is not believed is named, once.
    assert_eq!(said.matches("not believed").count(), 1, "{}", text(&out));
    assert!(said.contains("provider \"Hostile\""), "{}", text(&out));
    let by_id = records_by_id(&dir);
    assert_eq!(
        by_id.len(),
        BEHAVIOURS.len() * per,
        "every prompt has a record"
    );
    for (id, records) in &by_id {
        let last = records.last().expect("a record");
        let behaviour = id.rsplit_once('-').expect("behaviour-i").0;
        let what = format!("stream={stream} {id}: {records:?}");
        match behaviour {
            "ok" => {
                assert_eq!(last["status"], "success", "{what}");
                assert!(last.get("usage_flag").is_none(), "{what}");
            }
            "negative_cost" => {
                assert_eq!(last["status"], "success", "{what}");
                assert_eq!(last["usage_flag"], "negative_cost", "{what}");
                // Priced by the table: 12 × $1/M + 3 × $2/M.
                let cost = last["cost_usd"].as_f64().expect("a cost");
                assert!((cost - 18e-6).abs() < 1e-12, "{what}");
            }
            "non_numeric_usage" => {
                assert_eq!(last["status"], "success", "{what}");
                assert_eq!(last["usage_flag"], "tokens_not_counts", "{what}");
                assert!(last.get("prompt_tokens").is_none(), "{what}");
                assert!(last.get("completion_tokens").is_none(), "{what}");
            }
            _ => {
                // Over the limits: retried once, then failed for good; never a success.
                assert!(records.iter().all(|r| r["status"] == "failed"), "{what}");
                assert_eq!(last["error_class"], "over_limit", "{what}");
                assert_eq!(records.len(), 2, "{what}");
            }
        }
    }
    // A resume reads every record back: successes (flagged ones too) and over-limit failures
    // are finished, so nothing is sent again.
    let journaled = dir.journal().len();
    let again = generate(&dir, &server, stream);
    assert!(
        matches!(again.status.code(), Some(0 | 1)),
        "{}",
        text(&again)
    );
    assert_eq!(dir.journal().len(), journaled, "{}", text(&again));
    let o = output(
        Command::new(BIN)
            .args(["build", "--model"])
            .arg(smollm2())
            .arg("--run")
            .arg(dir.run())
            .arg("--out")
            .arg(dir.join("out")),
    );
    assert!(o.status.success(), "build: {}", text(&o));
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/build.json")).expect("build.json"),
    )
    .expect("build.json is JSON");
    assert!(
        info["counts"]["dropped_by_reason"]["corrupt_journal_line"].is_null(),
        "{info}"
    );
    let o = Command::new(BIN)
        .args(["verify", "--json", "--model"])
        .arg(smollm2())
        .arg("--run")
        .arg(dir.run())
        .output()
        .expect("run draftgen verify");
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert!(report.is_object(), "verify: {}", text(&o));
}

#[test]
fn hostile_answers_unstreamed_never_poison_the_run() {
    hostile_run(false);
}

#[test]
fn hostile_answers_streamed_never_poison_the_run() {
    hostile_run(true);
}

/// A tmpfs of `size` at `dir`, unmounted when dropped; `None` (with the reason printed) where
/// the test cannot mount one (not root, no tmpfs, a container without the capability).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            Ok(o) => {
                println!(
                    "skipped: cannot mount a tmpfs here ({})",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                println!("skipped: cannot run mount ({e})");
                None
            }
        }
    }

    fn resize(&self, size: &str) -> bool {
        Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_generate_and_the_resume_loses_and_duplicates_nothing() {
    let server = hostile_server();
    let dir = RunDir::new();
    let n = 400;
    let ids: Vec<String> = (0..n).map(|i| format!("disk-{i}")).collect();
    dir.write_prompts(prompts(&["disk"], n));
    let Some(disk) = Tmpfs::mount(&dir.run(), "2m") else {
        return;
    };
    let first = generate(&dir, &server, false);
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert!(!first.status.success(), "{}", text(&first));
    assert!(said.contains("No space left on device"), "{}", text(&first));
    assert!(!said.contains("panicked"), "{}", text(&first));
    assert!(disk.resize("64m"), "remount the tmpfs larger");
    let second = generate(&dir, &server, false);
    assert!(second.status.success(), "{}", text(&second));
    // Every line whole, every prompt answered exactly once.
    let mut successes: BTreeMap<String, usize> = BTreeMap::new();
    for record in dir.journal() {
        if record["status"] == "success" {
            let id = record["id"].as_str().expect("an id").to_string();
            *successes.entry(id).or_default() += 1;
        }
    }
    assert_eq!(successes.len(), n, "every prompt answered");
    assert!(
        successes.values().all(|&c| c == 1),
        "no prompt answered twice"
    );
    assert!(ids.iter().all(|id| successes.contains_key(id)));
}

#[test]
fn an_answer_limit_of_zero_is_refused_before_anything_is_sent() {
    let dir = RunDir::new();
    dir.write_prompts(prompts(&["ok"], 1));
    let mut cmd = dir.generate("http://127.0.0.1:9/v1");
    cmd.args(["--model", "m", "--max-answer-mb", "0"]);
    let o = output(&mut cmd);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("max_answer_mb"),
        "{}",
        text(&o)
    );
}
