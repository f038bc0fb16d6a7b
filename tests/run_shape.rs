//! The run records how its server shapes text (kind, version, spaces around special tokens) in
//! `manifest.json`, sends vLLM an explicit spaces setting, and resumes manifests written before
//! those fields existed without calling it a change of settings. Also: an empty answer cut by
//! `max_tokens` is a success, and `--kind vllm --server-token-ids --stream` is refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use common::servers::serve;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

/// A chat server that remembers every request body and answers with `answer`.
struct Server {
    base_url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn start(answer: Value) -> Server {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let state = (bodies.clone(), answer);
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(Arc::new(state));
    Server {
        base_url: serve(app),
        bodies,
    }
}

type Shared = Arc<(Arc<Mutex<Vec<Value>>>, Value)>;

async fn chat(State(state): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    state.0.lock().unwrap().push(body);
    Json(state.1.clone())
}

fn answer(content: &str, finish: &str) -> Value {
    json!({"id": "x", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                        "finish_reason": finish}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})
}

fn write_prompts(dir: &Path) -> PathBuf {
    let path = dir.join("prompts.jsonl");
    let line = json!({"id": "0123456789abcdef", "source": "test",
                      "messages": [{"role": "user", "content": "hi"}]});
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

fn generate(prompts: &Path, run: &Path, base_url: &str, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "generate",
            "--progress",
            "none",
            "--model",
            "m",
            "--prompts",
        ])
        .arg(prompts)
        .arg("--run")
        .arg(run)
        .args(["--base-url", base_url])
        .args(extra)
        .env_remove("DRAFTGEN_BASE_URL")
        .env_remove("DRAFTGEN_MODEL")
        .output()
        .unwrap()
}

fn manifest(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn manifest_records_the_server_kind_actually_used() {
    let server = start(answer("hello", "stop"));
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    for (kind, spaces) in [
        ("vllm", true),
        ("sglang", false),
        ("openrouter", false),
        ("llamacpp", false),
        ("generic", false),
    ] {
        let run = dir.path().join(format!("run-{kind}"));
        let out = generate(
            &prompts,
            &run,
            &server.base_url,
            &["--kind", kind, "--server-version", "0.11.0"],
        );
        // OpenRouter checks the key's credit first; without a key that is all it does.
        if kind != "openrouter" {
            assert!(out.status.success(), "{kind}: {}", stderr(&out));
        }
        let m = manifest(&run);
        let expected_kind = match kind {
            "openrouter" => "open_router",
            "llamacpp" => "llama_cpp",
            other => other,
        };
        assert_eq!(m["servers"][0]["kind"], expected_kind, "{m}");
        assert_eq!(m["servers"][0]["version"], "0.11.0", "{m}");
        assert_eq!(
            m["servers"][0]["spaces_around_special_tokens"], spaces,
            "{kind}: {m}"
        );
        assert!(m["request_options"].get("server_kind").is_none(), "{m}");
    }
    // The defaults are vLLM's own: nothing is sent.
    let bodies = server.bodies.lock().unwrap();
    assert!(bodies
        .iter()
        .all(|b| b.get("spaces_between_special_tokens").is_none()));
}

#[test]
fn an_explicit_spaces_setting_is_recorded_and_sent_to_vllm() {
    let server = start(answer("hello", "stop"));
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    let run = dir.path().join("run");
    let out = generate(
        &prompts,
        &run,
        &server.base_url,
        &["--kind", "vllm", "--spaces-around-special-tokens", "false"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        manifest(&run)["servers"][0]["spaces_around_special_tokens"],
        false
    );
    let bodies = server.bodies.lock().unwrap();
    assert_eq!(
        bodies[0]["spaces_between_special_tokens"], false,
        "{}",
        bodies[0]
    );
    drop(bodies);

    // The same command again resumes (nothing to do) without a settings change; another value
    // for the setting is a change.
    let again = generate(
        &prompts,
        &run,
        &server.base_url,
        &["--kind", "vllm", "--spaces-around-special-tokens", "false"],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        !stderr(&again).contains("settings changed"),
        "{}",
        stderr(&again)
    );
    let changed = generate(
        &prompts,
        &run,
        &server.base_url,
        &["--kind", "vllm", "--spaces-around-special-tokens", "true"],
    );
    assert_eq!(changed.status.code(), Some(2), "{}", stderr(&changed));
    assert!(
        stderr(&changed).contains("spaces_around_special_tokens"),
        "{}",
        stderr(&changed)
    );
}

/// A manifest as draftgen wrote it before it recorded server shapes: `server_kind: "generic"`
/// in `request_options`, no `servers`, and a fingerprint that hashed that placeholder.
#[test]
fn a_manifest_from_before_server_shapes_resumes_without_force() {
    let server = start(answer("hello", "stop"));
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    let run = dir.path().join("run");
    let out = generate(&prompts, &run, &server.base_url, &["--kind", "vllm"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Make it old: the placeholder back in, no servers, the fingerprint the old code computed
    // (any value other than the new one: the old algorithm is not reproduced here).
    let mut m = manifest(&run);
    m["request_options"]["server_kind"] = json!("generic");
    m.as_object_mut().unwrap().remove("servers");
    m["fingerprint"] = json!("0".repeat(64));
    std::fs::write(
        run.join("manifest.json"),
        serde_json::to_string_pretty(&m).unwrap(),
    )
    .unwrap();

    let again = generate(&prompts, &run, &server.base_url, &["--kind", "vllm"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        !stderr(&again).contains("settings changed"),
        "{}",
        stderr(&again)
    );
    // The resumed run now records what it knows about its server.
    let m = manifest(&run);
    assert_eq!(m["servers"][0]["kind"], "vllm", "{m}");
    assert!(m.get("previous_fingerprints").is_none(), "{m}");
}

#[test]
fn an_empty_answer_cut_by_max_tokens_is_a_success_not_retried() {
    // SGLang's answer when the cut falls inside the tool section.
    let server = start(answer("", "length"));
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    let run = dir.path().join("run");
    let out = generate(&prompts, &run, &server.base_url, &["--kind", "sglang"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.bodies.lock().unwrap().len(), 1, "retried");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["succeeded"], 1, "{summary}");
}

#[test]
fn vllm_server_token_ids_with_stream_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    let out = generate(
        &prompts,
        &dir.path().join("run"),
        "http://127.0.0.1:9/v1",
        &["--kind", "vllm", "--server-token-ids", "--stream"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--stream") && err.contains("server_token_ids"),
        "{err}"
    );
}

#[test]
fn summary_after_a_resume_keeps_every_session_labelled() {
    let server = start(answer("hello", "stop"));
    let dir = tempfile::tempdir().unwrap();
    let prompts = write_prompts(dir.path());
    let run = dir.path().join("run");
    for _ in 0..2 {
        let out = generate(&prompts, &run, &server.base_url, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let sessions = summary["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{summary}");
    assert_eq!(sessions[0]["requests"], 1);
    assert_eq!(sessions[0]["succeeded_attempts"], 1);
    assert_eq!(sessions[1]["requests"], 0);
    assert_eq!(summary["all_sessions"]["sessions"], 2);
    assert_eq!(summary["all_sessions"]["requests"], 1);
    // This session's figures stay where they were.
    assert_eq!(summary["session_requests"], 0);
    assert_eq!(summary["succeeded"], 1);
}
