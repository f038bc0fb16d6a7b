//! Complete or says so: `build` and `verify` state how many prompts of the run have no answer yet
//! and whether a writer still holds the run, warn (or, with `--require-complete`, refuse with exit
//! 3) while it is unfinished, and record it in build.json and verify.json.
//!
//! The run is the demo's (against the in-process simulator); it is made unfinished by holding
//! its lock as a writer would, and by adding prompts that a dead endpoint never answers.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::run::{text, RunDir, BIN};
use common::servers::refused_port;
use serde_json::{json, Value};

fn demo_run() -> RunDir {
    let dir = RunDir::new();
    let out = dir.demo().output().expect("run draftgen demo");
    assert!(out.status.success(), "demo: {}", text(&out));
    dir
}

fn build(dir: &RunDir, out: &str, extra: &[&str]) -> Output {
    dir.build("kimi-k2.5", out)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run draftgen build")
}

fn verify(dir: &RunDir, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args(["verify", "--model", "kimi-k2.5", "--run"])
        .arg(dir.run())
        .arg("--out")
        .arg(dir.join("verified"))
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run draftgen verify")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_finished_run_is_said_complete_and_build_json_records_it() {
    let dir = demo_run();
    let out = build(&dir, "out", &["--require-complete"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(text(&out).contains("run complete"), "{}", text(&out));
    let c = &read_json(&dir.join("out/build.json"))["completeness"];
    assert_eq!(c["complete"], true, "{c}");
    assert_eq!(c["no_answer"], 0, "{c}");
    assert_eq!(c["locked_by_writer"], false, "{c}");
    assert_eq!(c["prompts"], c["answered"], "{c}");
}

#[test]
fn a_run_held_by_a_writer_is_refused_with_require_complete_and_warned_about_without() {
    let dir = demo_run();
    let lock = draftgen::journal::RunLock::acquire(&dir.run()).expect("lock the run");
    let pid = std::process::id().to_string();

    let out = build(&dir, "refused", &["--require-complete"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("writer (PID {pid})")),
        "{}",
        text(&out)
    );
    assert!(!dir.join("refused").exists(), "nothing built");

    let out = verify(&dir, &["--require-complete"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));

    let out = verify(&dir, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(text(&out).contains("incomplete run"), "{}", text(&out));
    let c = &read_json(&dir.join("verified/verify.json"))["completeness"];
    assert_eq!(c["locked_by_writer"], true, "{c}");
    assert_eq!(c["complete"], false, "{c}");

    let out = build(&dir, "warned", &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(
        text(&out).contains("warning: incomplete run"),
        "{}",
        text(&out)
    );
    let c = &read_json(&dir.join("warned/build.json"))["completeness"];
    assert_eq!(
        (c["locked_by_writer"].clone(), c["complete"].clone()),
        (json!(true), json!(false))
    );
    drop(lock);
}

#[test]
fn prompts_without_an_answer_are_counted_and_refused() {
    let dir = demo_run();
    let before = read_json(&dir.run().join("summary.json"));
    let answered = before["succeeded"].as_u64().unwrap() + before["skipped"].as_u64().unwrap();
    let mut prompts = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.prompts())
        .unwrap();
    for i in 0..3 {
        let line = json!({"id": format!("extra-{i}"), "source": "test",
                          "messages": [{"role": "user", "content": format!("extra question {i}")}]});
        writeln!(prompts, "{line}").unwrap();
    }
    drop(prompts);
    // The new prompts go to an endpoint where nothing listens: none is answered.
    let refused = refused_port();
    let out = dir
        .generate(&format!("http://127.0.0.1:{}/v1", refused.port))
        .args(["--force", "--model", "m"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let input = read_json(&dir.run().join("summary.json"))["input_prompts"].clone();
    let total = input.as_u64().expect("summary.json input_prompts");

    let out = build(&dir, "partial", &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let said = format!("3 of {total} prompt(s) have no answer yet");
    assert!(text(&out).contains(&said), "{}", text(&out));
    let c = &read_json(&dir.join("partial/build.json"))["completeness"];
    assert_eq!(c["no_answer"], 3, "{c}");
    assert_eq!(c["answered"], answered, "{c}");
    assert_eq!(c["complete"], false, "{c}");

    let out = build(&dir, "refused", &["--require-complete"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains(&said), "{}", text(&out));
    let out = verify(&dir, &["--require-complete"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
}
