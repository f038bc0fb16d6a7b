//! What a newcomer meets running the demo twice, and with another `--model`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn demo(out: &Path, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_draftgen"))
        .args(["demo", "--progress", "none", "--fault-rate", "0", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("run draftgen demo");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "demo failed:\n{stderr}");
    stderr
}

#[test]
fn the_second_demo_run_sees_the_same_settings() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &[]);
    let second = demo(dir.path(), &[]);
    // The simulator listens on another port; that is not a change of settings, and nobody
    // passed --force.
    assert!(!second.contains("settings changed"), "{second}");
    assert!(!second.contains("--force"), "{second}");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/manifest.json")).unwrap(),
    )
    .unwrap();
    assert!(
        manifest.get("previous_fingerprints").is_none(),
        "{manifest}"
    );
    assert!(
        !manifest["endpoints"][0]
            .as_str()
            .unwrap()
            .contains("127.0.0.1"),
        "{manifest}"
    );
}

#[test]
fn demo_model_means_one_model_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = demo(dir.path(), &["--model", "kimi-k2-thinking"]);
    // The profile the samples are rebuilt with (and the simulator renders with).
    assert!(stderr.contains("(model kimi-k2-thinking)"), "{stderr}");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/manifest.json")).unwrap(),
    )
    .unwrap();
    // The model the requests name.
    assert_eq!(
        manifest["model"], "moonshotai/kimi-k2-thinking",
        "{manifest}"
    );
    // The samples are K2-Thinking renders: its template does not open `<think>` in the
    // generation prompt as K2.5's does, so no prompt ends with the `<think>` id.
    let think = 163606u64; // `<think>` in the Kimi vocabulary (tokenizer_config.json added tokens)
    let samples = std::fs::read_to_string(dir.path().join("samples.jsonl")).unwrap();
    for line in samples.lines() {
        let sample: Value = serde_json::from_str(line).unwrap();
        let ids = sample["input_ids"].as_array().unwrap();
        let prompt_len = sample["prompt_len"].as_u64().unwrap() as usize;
        assert_ne!(
            ids[..prompt_len].last().and_then(Value::as_u64),
            Some(think),
            "{}",
            sample["id"]
        );
    }
}
