//! One writer per run directory: a `draftgen generate` started on a run another process holds
//! refuses before it reads, repairs or appends anything, and names the holder's PID.

use std::path::Path;
use std::process::{Command, Stdio};

use draftgen::journal::RunLock;

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn write_inputs(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let prompts = dir.join("prompts.jsonl");
    std::fs::write(
        &prompts,
        r#"{"id":"p1","source":"test","messages":[{"role":"user","content":"hi"}]}"#.to_string()
            + "\n",
    )
    .unwrap();
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        "[request]\nmodel = \"test/model\"\nmax_tokens = 8\n[retry]\nmax_attempts = 1\n",
    )
    .unwrap();
    (prompts, config)
}

#[test]
fn generate_refuses_a_run_another_process_holds_naming_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let (prompts, config) = write_inputs(dir.path());
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    // This test process is "the other writer" (flock excludes across processes).
    let held = RunLock::acquire(&run).unwrap();
    let out = Command::new(BIN)
        .args(["generate", "--prompts"])
        .arg(&prompts)
        .arg("--run")
        .arg(&run)
        .arg("--config")
        .arg(&config)
        // Never contacted: the lock is checked first.
        .args(["--base-url", "http://127.0.0.1:9/v1", "--progress", "none"])
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let pid = std::process::id().to_string();
    assert!(
        stderr.contains("another process is writing this run") && stderr.contains(&pid),
        "{stderr}"
    );
    // Nothing was appended by the refused process.
    let journal = run.join("journal");
    let appended = std::fs::read_dir(&journal).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.metadata().is_ok_and(|m| m.len() > 0))
            .count()
    });
    assert_eq!(appended, 0);

    // Once the holder is gone, the run is the next writer's (the stale PID does not block).
    drop(held);
    let second = RunLock::acquire(&run).unwrap();
    drop(second);
}
