//! `draftgen demo` end to end: bundled samples → prompts → generation against the in-process
//! simulator → reconstructed samples, with every prompt accounted for.

mod common;

use serde_json::Value;

use common::run::RunDir;

fn demo(flavor: &str) -> (RunDir, String) {
    let dir = RunDir::new();
    let output = dir
        .demo()
        .args(["--flavor", flavor])
        .output()
        .expect("run draftgen demo");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "demo failed:\n{stderr}");
    (dir, stderr)
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn demo_accounts_for_every_prompt_and_writes_exact_samples() {
    let (dir, stderr) = demo("vllm");
    let prompts = lines(&dir.path().join("prompts.jsonl"));
    let samples = lines(&dir.path().join("samples.jsonl"));
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(!prompts.is_empty());
    let count = |key: &str| summary[key].as_u64().unwrap_or(0);
    assert_eq!(
        count("succeeded") + count("failed") + count("skipped"),
        prompts.len() as u64,
        "summary: {summary}"
    );
    assert_eq!(samples.len() as u64, count("succeeded"));
    for sample in &samples {
        let prompt = sample["prompt_ids"].as_array().unwrap().len();
        let completion = sample["completion_ids"].as_array().unwrap().len();
        let mask = sample["loss_mask"].as_array().unwrap();
        assert_eq!(mask.len(), prompt + completion);
        assert!(mask[..prompt].iter().all(|m| m == 0));
        assert!(mask[prompt..].iter().all(|m| m == 1));
        // The vLLM flavour returns the server's own ids: reconstruction must agree with them.
        assert_eq!(
            sample["warnings"],
            serde_json::json!([]),
            "sample {}",
            sample["id"]
        );
    }
    assert!(stderr.contains("where everything went"), "{stderr}");
}

#[test]
fn demo_resumes_without_generating_twice() {
    let (dir, _) = demo("openrouter");
    let journal = |d: &std::path::Path| {
        std::fs::read_dir(d.join("run/journal"))
            .unwrap()
            .map(|e| {
                std::fs::read_to_string(e.unwrap().path())
                    .unwrap()
                    .lines()
                    .count()
            })
            .sum::<usize>()
    };
    let before = journal(dir.path());
    let output = dir.demo().output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        journal(dir.path()),
        before,
        "a second demo run must not generate again"
    );
}
