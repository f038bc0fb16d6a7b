//! `draftgen init` then `draftgen run` as a user would: one config file, one command, from a
//! dataset to trainer files against the simulator; a second run skips every step.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::servers::start_sim;
use draftgen::sim::{Flavor, SimConfig};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn draftgen(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("spawn draftgen")
}

fn write_dataset(dir: &Path) {
    std::fs::create_dir_all(dir.join("datasets")).unwrap();
    let lines: String = (0..6)
        .map(|i| {
            let prompt = json!({"messages": [
                {"role": "user", "content": format!("Question {i}: what is {i} plus {i}?")}
            ]});
            format!("{prompt}\n")
        })
        .collect();
    std::fs::write(dir.join("datasets/questions.jsonl"), lines).unwrap();
}

#[test]
fn init_then_run_goes_from_a_dataset_to_trainer_files_and_a_second_run_skips_every_step() {
    let sim = start_sim(SimConfig {
        flavor: Flavor::OpenRouter,
        seed: 5,
        model_dir: Some(common::assets().join("kimi-k2.5")),
        profile: Some("kimi-k2.5".into()),
        // The model id init writes, so generate's model-list check finds it.
        model_name: "kimi-k2.5".into(),
        ..SimConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let job = root.join("job");
    std::fs::create_dir_all(&job).unwrap();
    write_dataset(&job);
    let base_url = sim.base_url();
    let init = draftgen(
        &job,
        &[
            "init",
            "--base-url",
            &base_url,
            "--kind",
            "openrouter",
            "--model",
            "kimi-k2.5",
        ],
    );
    assert!(init.status.success(), "{}", text(&init));
    let config = job.join("draftgen.toml");
    let written = std::fs::read_to_string(&config).unwrap();
    for key in [
        "datasets",
        "provider",
        "max_cost_usd",
        "first_byte_s",
        "reasoning",
    ] {
        assert!(written.contains(key), "init writes {key}:\n{written}");
    }
    // The simulator serves one model under one provider: small answers, no routing.
    let edited = written
        .replace("max_tokens = 4096", "max_tokens = 64")
        .replace("provider = {", "# provider = {")
        .replace("draft_vocab_size = 32000", "draft_vocab_size = 256");
    std::fs::write(&config, edited).unwrap();

    // Run from another directory: paths in the file are relative to the file.
    let first = draftgen(
        &root,
        &["run", "--config", "job/draftgen.toml", "--progress", "none"],
    );
    assert!(first.status.success(), "{}", text(&first));
    let out = job.join("draftgen-out");
    for file in [
        "prompts.jsonl",
        "run/summary.json",
        "build/build.json",
        "verify/verify.json",
        "export/specforge/specforge.jsonl",
        "export/speculators/prepared/token_freq.pt",
        "export/vocab-specforge/vocab_mapping.pt",
        "export/vocab-speculators/d2t.npy",
    ] {
        assert!(out.join(file).is_file(), "{file}\n{}", text(&first));
    }
    let stdout = String::from_utf8_lossy(&first.stdout);
    let prompts_line = format!(
        "prompts_path: {}",
        out.join("export/specforge/specforge.jsonl").display()
    );
    assert!(stdout.contains(&prompts_line), "{stdout}");
    let d2t = format!(
        "--d2t-path {}",
        out.join("export/vocab-speculators/d2t.npy").display()
    );
    assert!(stdout.contains(&d2t), "{stdout}");
    let rows = std::fs::read_to_string(out.join("export/specforge/specforge.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), 6, "one sample per prompt");

    let requests = sim.counters().requests;
    let second = draftgen(
        &root,
        &["run", "--config", "job/draftgen.toml", "--progress", "none"],
    );
    assert!(second.status.success(), "{}", text(&second));
    let stderr = String::from_utf8_lossy(&second.stderr);
    for step in ["prepare", "generate", "build", "verify", "export"] {
        assert!(
            stderr.contains(&format!("── {step}: up to date, skipped")),
            "{step}: {stderr}"
        );
    }
    assert_eq!(sim.counters().requests, requests, "nothing was sent again");

    // Another draft vocabulary size: only the export is out of date.
    let settings = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        settings.replace("draft_vocab_size = 256", "draft_vocab_size = 128"),
    )
    .unwrap();
    let third = draftgen(
        &root,
        &["run", "--config", "job/draftgen.toml", "--progress", "none"],
    );
    assert!(third.status.success(), "{}", text(&third));
    let stderr = String::from_utf8_lossy(&third.stderr);
    for step in ["prepare", "generate", "build", "verify"] {
        assert!(
            stderr.contains(&format!("── {step}: up to date")),
            "{step}: {stderr}"
        );
    }
    assert!(stderr.contains("── export\n"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&third.stdout).contains("--draft-vocab-size 128"),
        "{}",
        text(&third)
    );
    assert_eq!(sim.counters().requests, requests);
}

#[test]
fn a_misspelt_key_in_the_job_file_is_answered_with_the_nearest_one() {
    let tmp = tempfile::tempdir().unwrap();
    let init = draftgen(tmp.path(), &["init"]);
    assert!(init.status.success(), "{}", text(&init));
    let config = tmp.path().join("draftgen.toml");
    let written = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        written.replace("allow_fallbacks = false", "allow_fallback = false"),
    )
    .unwrap();
    let o = draftgen(tmp.path(), &["run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("did you mean `allow_fallbacks`?"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("require_parameters").count(), 1, "{stderr}");
    // init refuses to overwrite what the user edited.
    assert_eq!(draftgen(tmp.path(), &["init"]).status.code(), Some(2));
}
