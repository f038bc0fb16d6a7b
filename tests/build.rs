//! `draftgen build` end to end: a run made by the demo (against the in-process simulator) →
//! Parquet shards + JSONL + build.json, read back by pyarrow (`tests/py/check_build.py`) and
//! compared with the JSONL; policies, exit codes and the summary.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use common::run::{jsonl as lines, stderr, RunDir, BIN};

/// A demo run (prompts.jsonl, run/) in a fresh directory.
fn demo_run(flavor: &str) -> RunDir {
    let dir = RunDir::new();
    let output = dir
        .demo()
        .args(["--flavor", flavor])
        .output()
        .expect("run draftgen demo");
    assert!(
        output.status.success(),
        "demo failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir
}

fn build(dir: &Path, out: &str, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args(["build", "--model", "kimi-k2.5", "--run"])
        .arg(dir.join("run"))
        .arg("--out")
        .arg(dir.join(out))
        .arg("--prompts")
        .arg(dir.join("prompts.jsonl"))
        .args(["--jsonl", "--json"])
        .args(extra)
        .output()
        .expect("run draftgen build")
}

/// pyarrow reads the output back and it agrees with the JSONL (see the script's header).
fn check_with_pyarrow(out: &Path) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/check_build.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(out)
        .output()
        .expect("python3 (with pyarrow) must be installed; .ci/run installs pyarrow");
    assert!(
        o.status.success(),
        "check_build.py failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).expect("checker JSON")
}

#[test]
fn vllm_run_builds_with_server_ids_and_pyarrow_reads_what_the_jsonl_says() {
    let dir = demo_run("vllm");
    let o = build(
        dir.path(),
        "build",
        &["--shard-rows", "7", "--row-group-rows", "3"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("with the server's own ids"), "{err}");
    assert!(err.contains("inconsistent (all others kept)"), "{err}");
    let out = dir.path().join("build");
    let checked = check_with_pyarrow(&out);
    assert!(checked["shards"].as_u64().unwrap() > 1, "{checked}");

    // Every success is a sample, with the ids the demo's own build wrote (sharding changes none).
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap(),
    )
    .unwrap();
    let samples = lines(&out.join("samples.jsonl"));
    assert_eq!(samples.len() as u64, summary["succeeded"].as_u64().unwrap());
    let demo: std::collections::HashMap<String, Value> = lines(&dir.path().join("samples.jsonl"))
        .into_iter()
        .map(|s| (s["id"].as_str().unwrap().to_string(), s))
        .collect();
    for s in &samples {
        let d = &demo[s["id"].as_str().unwrap()];
        assert_eq!(s["input_ids"], d["input_ids"]);
        assert_eq!(s["loss_mask"], d["loss_mask"]);
        assert_eq!(s["fidelity_class"], "exact_by_server_ids");
        assert_eq!(s["turns"], 1);
        assert!(s["source"].is_string(), "source from --prompts: {s}");
    }
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("build.json")).unwrap()).unwrap();
    assert_eq!(info["model"]["profile"], "kimi-k2.5");
    assert_eq!(info["model"]["template_sha256"].as_str().unwrap().len(), 64);
    assert!(info["model"]["tokenizer_files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["file"] == "tiktoken.model"));
    assert_eq!(info["counts"]["with_server_ids"], samples.len());
    assert_eq!(
        info["policies"]["drop_classes"],
        serde_json::json!(["inconsistent"])
    );
    let stdout: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stdout["counts"], info["counts"]);
}

#[test]
fn text_only_run_says_rebuilt_from_text_and_policies_cut_or_drop() {
    let dir = demo_run("openrouter");
    let o = build(dir.path(), "all", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("rebuilt from text"), "{}", stderr(&o));
    check_with_pyarrow(&dir.path().join("all"));
    let all = lines(&dir.path().join("all/samples.jsonl"));
    let longest = all
        .iter()
        .map(|s| s["input_ids"].as_array().unwrap().len())
        .max()
        .unwrap();
    let max = longest / 2;
    let over = all
        .iter()
        .filter(|s| s["input_ids"].as_array().unwrap().len() > max)
        .count();
    assert!(over > 0);

    // cut: every sample kept, over-long ones cut to `max` (ids and mask together).
    let o = build(
        dir.path(),
        "cut",
        &["--max-len", &max.to_string(), "--over-length", "cut"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    check_with_pyarrow(&dir.path().join("cut"));
    let cut = lines(&dir.path().join("cut/samples.jsonl"));
    assert_eq!(cut.len(), all.len());
    for (c, a) in cut.iter().zip(&all) {
        let n = a["input_ids"].as_array().unwrap().len().min(max);
        assert_eq!(
            c["input_ids"].as_array().unwrap()[..],
            a["input_ids"].as_array().unwrap()[..n]
        );
        assert_eq!(
            c["loss_mask"].as_array().unwrap()[..],
            a["loss_mask"].as_array().unwrap()[..n]
        );
    }
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["counts"]["cut"], over);

    // drop (the default): the over-long ones are dropped and counted.
    let o = build(dir.path(), "drop", &["--max-len", &max.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["counts"]["dropped_by_reason"]["over_max_len"], over);
    assert_eq!(
        summary["counts"]["samples"].as_u64().unwrap() as usize,
        all.len() - over
    );

    // dropping every class leaves nothing, and says why.
    let o = build(
        dir.path(),
        "none",
        &[
            "--drop-class",
            "unique,ambiguous,lossy,exact_by_server_ids,truncated_mid_character,inconsistent",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    check_with_pyarrow(&dir.path().join("none"));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["counts"]["samples"], 0);
    let dropped: u64 = summary["counts"]["dropped_by_reason"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(dropped as usize, all.len());
}

#[test]
fn a_corrupt_journal_line_is_a_named_counted_skip_and_the_rest_is_written() {
    let dir = demo_run("openrouter");
    let journal = dir.path().join("run/journal");
    let segment = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let mut text = std::fs::read_to_string(&segment).unwrap();
    let good = text.lines().count();
    text.push_str("{\"id\": \"broken\", not json}\n");
    std::fs::write(&segment, text).unwrap();
    let o = build(dir.path(), "out", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = format!("{}:{}", segment.display(), good + 1);
    assert!(stderr(&o).contains(&line), "names {line}: {}", stderr(&o));
    assert!(!lines(&dir.path().join("out/samples.jsonl")).is_empty());
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/build.json")).unwrap())
            .unwrap();
    assert_eq!(
        info["counts"]["dropped_by_reason"]["corrupt_journal_line"], 1,
        "{info}"
    );
}

/// `build.json` names the run by its absolute path, so that `verify` of the build finds the run
/// from any working directory.
#[test]
fn build_json_names_the_run_by_its_absolute_path() {
    let dir = demo_run("openrouter");
    let o = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "build",
            "--model",
            "kimi-k2.5",
            "--run",
            "run",
            "--out",
            "out",
        ])
        .output()
        .expect("run draftgen build");
    assert!(o.status.success(), "{}", stderr(&o));
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/build.json")).unwrap())
            .unwrap();
    let run = std::fs::canonicalize(dir.path().join("run")).unwrap();
    assert_eq!(info["run"], run.display().to_string());
}

#[test]
fn bad_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["build", "--model", "kimi-k2.5", "--run"])
        .arg(dir.path().join("nope"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a run directory"), "{}", stderr(&o));
    std::fs::create_dir_all(dir.path().join("run/journal")).unwrap();
    let o = Command::new(BIN)
        .args([
            "build",
            "--model",
            "kimi-k2.5",
            "--drop-class",
            "exactish",
            "--run",
        ])
        .arg(dir.path().join("run"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown fidelity class"),
        "{}",
        stderr(&o)
    );
}

/// Loss masks against the reference renders of the parity corpus (`tests/data/build/masks_*.jsonl`,
/// made by `tests/data/gen/make_build_masks.py` from `tests/data/parity/render_*.jsonl`): each line
/// is a conversation ending in an assistant turn; the reference's ids up to the end-of-turn token
/// are the expected `input_ids`, its prompt render's length is where the mask turns to 1.
/// Every sample `build` writes must equal that exactly, or say in its fidelity class that it may
/// not (never silently wrong) — and nearly all must be exact.
#[test]
fn loss_masks_match_the_reference_renders_of_the_parity_corpus() {
    let assets = draftgen::model::assets::assets_root().expect("reference assets");
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/build");
    for (family, model, profile) in [
        ("qwen3", "qwen3", None),
        ("deepseek_v3", "deepseek-v3", None),
        ("kimi_k2", "kimi-k2.5", Some("kimi-k2")),
        ("kimi_k2_thinking", "kimi-k2.5", Some("kimi-k2-thinking")),
    ] {
        let cases = lines(&data.join(format!("masks_{family}.jsonl")));
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("run/journal");
        std::fs::create_dir_all(&journal).unwrap();
        let mut text = String::new();
        for (n, case) in cases.iter().enumerate() {
            let record = serde_json::json!({
                "id": format!("case-{n}"), "attempt": 1, "status": "success", "endpoint": "parity",
                "started_at": "2026-01-01T00:00:00+00:00", "latency_ms": 0,
                "request": case["request"], "response": case["response"],
            });
            text.push_str(&record.to_string());
            text.push('\n');
        }
        std::fs::write(journal.join("000001.jsonl"), text).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args([
            "build",
            "--model",
            model,
            "--drop-class",
            "none",
            "--jsonl",
            "--run",
        ])
        .arg(dir.path().join("run"))
        .arg("--out")
        .arg(dir.path().join("out"));
        if let Some(profile) = profile {
            cmd.args(["--profile", profile])
                .arg("--chat-template")
                .arg(assets.join(cases[0]["template"].as_str().expect("kimi template path")));
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{family}: {}", stderr(&o));
        check_with_pyarrow(&dir.path().join("out"));
        let samples = lines(&dir.path().join("out/samples.jsonl"));
        assert_eq!(
            samples.len(),
            cases.len(),
            "{family}: every case is a sample"
        );
        let mut exact = 0;
        for (sample, case) in samples.iter().zip(&cases) {
            let prompt_len = case["prompt_len"].as_u64().unwrap() as usize;
            let expected_ids = case["input_ids"].as_array().unwrap();
            let expected_mask: Vec<Value> = (0..expected_ids.len())
                .map(|i| Value::from(u8::from(i >= prompt_len)))
                .collect();
            let same = sample["input_ids"].as_array().unwrap() == expected_ids
                && sample["loss_mask"].as_array().unwrap() == &expected_mask
                && sample["prompt_len"] == prompt_len;
            let certain = matches!(
                sample["fidelity_class"].as_str(),
                Some("unique" | "exact_by_server_ids")
            );
            assert!(
                same || !certain,
                "{family} {}: ids or mask differ from the reference but the sample claims {}",
                sample["id"],
                sample["fidelity_class"]
            );
            exact += usize::from(same);
        }
        assert!(
            exact * 10 >= cases.len() * 9,
            "{family}: only {exact} of {} cases exact",
            cases.len()
        );
    }
}
