//! `draftgen demo` end to end: `draftgen run` on the bundled samples against the in-process
//! simulator — prompts, generation, samples, verify and trainer files — with every prompt
//! accounted for.

mod common;

use serde_json::Value;

use common::run::RunDir;

/// The demo in a new directory; its stdout and stderr.
fn demo(flavor: &str) -> (RunDir, String, String) {
    let dir = RunDir::new();
    let output = dir
        .demo()
        .args(["--flavor", flavor])
        .output()
        .expect("run draftgen demo");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "demo failed:\n{stderr}");
    (dir, stdout, stderr)
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
    let (dir, stdout, stderr) = demo("vllm");
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
        let ids = sample["input_ids"].as_array().unwrap().len();
        let prompt = sample["prompt_len"].as_u64().unwrap() as usize;
        let completion = sample["completion_len"].as_u64().unwrap() as usize;
        let mask = sample["loss_mask"].as_array().unwrap();
        assert_eq!(ids, prompt + completion);
        assert_eq!(mask.len(), ids);
        assert!(mask[..prompt].iter().all(|m| m == 0));
        assert!(mask[prompt..].iter().all(|m| m == 1));
        // The vLLM flavour returns the server's own ids: the samples are those ids, and
        // reconstruction agreed with them (a disagreement would make them inconsistent).
        assert_eq!(
            sample["fidelity_class"], "exact_by_server_ids",
            "sample {}",
            sample["id"]
        );
    }
    // The whole job ran: the samples are build's, verify passed, the trainers' files are there.
    assert_eq!(
        std::fs::read(dir.path().join("samples.jsonl")).unwrap(),
        std::fs::read(dir.path().join("build/samples.jsonl")).unwrap()
    );
    for file in [
        "draftgen.toml",
        "verify/verify.json",
        "verify/report.html",
        "export/specforge/specforge.jsonl",
        "export/vocab-speculators/d2t.npy",
    ] {
        assert!(dir.path().join(file).is_file(), "{file}\n{stderr}");
    }
    assert!(stdout.contains("where everything went"), "{stdout}");
    assert!(stdout.contains("next step (SpecForge)"), "{stdout}");
    assert!(
        stderr.contains("draftgen run --config"),
        "the demo says how to run its job again: {stderr}"
    );
}

#[test]
fn demo_resumes_without_generating_twice() {
    let (dir, _, _) = demo("openrouter");
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
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        journal(dir.path()),
        before,
        "a second demo run must not generate again"
    );
    // The simulator's new port is no change of the job: every step is current.
    for step in ["prepare", "generate", "build", "verify", "export"] {
        assert!(
            stderr.contains(&format!("── {step}: up to date, skipped")),
            "{step}: {stderr}"
        );
    }
}

/// `--model` names another family (Qwen3-Coder, whose tokenizer files are Qwen3's): the demo
/// finds them among the reference assets, makes the family's model directory in its own and
/// runs the same job — every sample exact by the server's ids.
#[test]
fn demo_runs_the_same_job_for_another_family() {
    let dir = RunDir::new();
    let output = dir
        .demo()
        .args(["--flavor", "vllm", "--model", "qwen3-coder"])
        .env("DRAFTGEN_ASSETS", common::assets())
        .output()
        .expect("run draftgen demo");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "demo failed:\n{stderr}");
    assert!(stderr.contains("(model qwen3-coder)"), "{stderr}");
    let model = dir.path().join("model");
    assert!(model.join("chat_template.jinja").is_file(), "{stderr}");
    let job = std::fs::read_to_string(dir.path().join("draftgen.toml")).unwrap();
    assert!(job.contains(&format!(
        "{:?}",
        model.canonicalize().unwrap().display().to_string()
    )));
    let samples = lines(&dir.path().join("samples.jsonl"));
    assert!(!samples.is_empty());
    for sample in &samples {
        assert_eq!(
            sample["fidelity_class"], "exact_by_server_ids",
            "sample {}",
            sample["id"]
        );
    }
}

/// Without the family's tokenizer files anywhere, the demo says where it looked and exactly
/// where to get them, and stops with a usage error.
#[test]
fn demo_says_where_to_get_a_familys_tokenizer() {
    let dir = RunDir::new();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = dir
        .demo()
        .args(["--model", "meta-llama/llama-3.1-70b-instruct"])
        .env("DRAFTGEN_ASSETS", &empty)
        .env("DRAFTGEN_TEST_ASSETS_CACHE", &empty)
        .env("HF_HUB_CACHE", &empty)
        .current_dir(&empty)
        .output()
        .expect("run draftgen demo");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for expected in [
        "no tokenizer files for the llama3 family",
        empty.display().to_string().as_str(),
        "huggingface-cli download meta-llama/llama-3.1-70b-instruct",
        "--tokenizer DIR",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
}
