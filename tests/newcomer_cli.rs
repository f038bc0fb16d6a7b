//! The rough edges a newcomer meets on the command line: each
//! test runs the binary as a user would.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn render_reports_each_bad_line_and_renders_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let good = json!({"messages": [{"role": "user", "content": "hi"}]});
    std::fs::write(
        &input,
        format!("{good}\nnot json\n{{\"messages\": 3}}\n{good}\n"),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["render", "--model", "qwen3", "--input"])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("in.jsonl:2") && err.contains("in.jsonl:3"),
        "{err}"
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], lines[3]);
    assert!(lines[0]["ids"].is_array());
    assert!(lines[1]["error"].as_str().unwrap().contains("in.jsonl:2"));
    assert!(lines[2]["error"].as_str().unwrap().contains("in.jsonl:3"));
}

#[test]
fn render_says_when_the_template_ignores_tools() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let tool = json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let with_tools =
        json!({"messages": [{"role": "user", "content": "weather?"}], "tools": [tool]});
    let without = json!({"messages": [{"role": "user", "content": "weather?"}], "tools": []});
    std::fs::write(&input, format!("{with_tools}\n{without}\n")).unwrap();
    let out = Command::new(BIN)
        .args(["render", "--model", "deepseek-v3", "--input"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("in.jsonl:1") && err.contains("ignores `tools`"),
        "{err}"
    );
    assert!(!err.contains("in.jsonl:2"), "{err}");
    let lines = json_lines(&out);
    assert!(lines[0]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("ignores `tools`"));
    // The contract stays `{text, ids}` when there is nothing to say.
    let mut keys: Vec<&String> = lines[1].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, vec!["ids", "text"]);
}

#[test]
fn prepare_skips_files_that_are_not_datasets_in_one_line() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let files: Vec<_> = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("prepare")
        .args(&files)
        .arg("--out")
        .arg(dir.path().join("prompts.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("not datasets")).collect();
    assert_eq!(skipped.len(), 1, "{err}");
    assert!(
        skipped[0].contains("README.md") && skipped[0].contains("LICENSE"),
        "{err}"
    );
    assert!(!err.to_lowercase().contains("broken json"), "{err}");
}

#[test]
fn tokenize_without_text_names_both_inputs() {
    let out = Command::new(BIN)
        .args(["tokenize", "--model", "qwen3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--text") && err.contains("--input"), "{err}");
}

#[test]
fn sim_loads_the_tokenizer_of_a_known_model_name() {
    let mut child = Command::new(BIN)
        .args(["sim", "--port", "0", "--model", "kimi-k2.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(line.contains("tokenizer and template from"), "{line}");
    assert!(line.contains("kimi-k2.5"), "{line}");
}

/// Against a port where nothing listens: the console names the error (not only a count), and
/// a log written to a pipe carries no ANSI colour codes.
#[test]
fn a_dead_endpoint_shows_its_first_error_verbatim_without_colours() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    let line = json!({"id": "0123456789abcdef", "source": "test",
                      "messages": [{"role": "user", "content": "hi"}]});
    std::fs::write(&prompts, format!("{line}\n")).unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(&config, "[retry]\nmax_attempts = 1\n").unwrap();
    // An unreadable previous summary makes draftgen log a warning (through tracing) into the pipe.
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    std::fs::write(dir.path().join("run/summary.json"), "not json").unwrap();
    let out = Command::new(BIN)
        .args([
            "generate",
            "--progress",
            "plain",
            "--model",
            "m",
            "--prompts",
        ])
        .arg(&prompts)
        .arg("--run")
        .arg(dir.path().join("run"))
        .arg("--config")
        .arg(&config)
        .args(["--base-url", "http://127.0.0.1:9/v1"])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot read the previous summary"), "{err}");
    assert!(!err.contains('\u{1b}'), "ANSI codes in a pipe: {err:?}");
    assert!(err.contains("first network error: endpoint"), "{err}");
    assert!(
        err.contains("127.0.0.1:9") || err.contains("refused"),
        "{err}"
    );
    // The cause is named once, not once per layer that wraps it.
    let first = err
        .lines()
        .find(|l| l.contains("first network error"))
        .unwrap();
    let parts: Vec<&str> = first.split(": ").collect();
    assert!(parts.windows(2).all(|w| w[0] != w[1]), "{first}");
}

#[test]
fn looked_in_lists_each_folder_once() {
    use draftgen::model::assets::{resolve_model_in, Locations};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let locations = Locations {
        asset_roots: vec![root.clone(), root.clone()],
        hub_cache: None,
        endpoint: "http://127.0.0.1:9".into(),
        token: None,
        embedded_cache: None,
    };
    let err = resolve_model_in("qwen3", &locations)
        .unwrap_err()
        .to_string();
    let folder = root.join("qwen3").display().to_string();
    assert_eq!(err.matches(&folder).count(), 1, "{err}");
}

/// One prompt in `dir/prompts.jsonl`; its path.
fn one_prompt(dir: &Path) -> std::path::PathBuf {
    let prompts = dir.join("prompts.jsonl");
    let line = json!({"id": "0123456789abcdef", "source": "test",
                      "messages": [{"role": "user", "content": "hi"}]});
    std::fs::write(&prompts, format!("{line}\n")).unwrap();
    prompts
}

/// `generate` of `dir/prompts.jsonl` into `dir/run` against `base_url`, without a key.
fn generate(dir: &Path, base_url: &str, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "generate",
            "--progress",
            "none",
            "--model",
            "m",
            "--prompts",
        ])
        .arg(one_prompt(dir))
        .arg("--run")
        .arg(dir.join("run"))
        .args(["--base-url", base_url])
        .args(extra)
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Without a key, OpenRouter answers every request 401: said in one line naming the variable,
/// before anything is sent or written.
#[test]
fn a_missing_key_is_one_line_naming_the_variable_and_leaves_no_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = generate(dir.path(), "https://openrouter.ai/api/v1", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("OPENROUTER_API_KEY is not set"), "{err}");
    assert!(!dir.path().join("run").exists(), "no empty run directory");

    let probe = Command::new(BIN)
        .args(["probe", "--model", "moonshotai/kimi-k2.5"])
        .env_remove("OPENROUTER_API_KEY")
        .output()
        .unwrap();
    assert_eq!(probe.status.code(), Some(2), "{}", stderr(&probe));
    let err = stderr(&probe);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("OPENROUTER_API_KEY is not set"), "{err}");
}

/// A wrong path under a live server: the 404 names the URL that was requested.
#[test]
fn a_404_names_the_url_requested() {
    let sim = common::servers::start_sim(draftgen::sim::SimConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let wrong = sim.base_url().replace("/v1", "/api");
    let out = generate(dir.path(), &wrong, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("POST {wrong}/chat/completions")),
        "{err}"
    );
    // The path draftgen appends itself, given in the base URL, is refused with the right one.
    let doubled = format!("{}/chat/completions", sim.base_url());
    let out = generate(dir.path(), &doubled, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("use {}", sim.base_url())),
        "{}",
        stderr(&out)
    );
}

/// Where the server is reached, how many requests are in flight and how long they may take do
/// not change the data: a resume with other values goes on without --force.
#[test]
fn a_resume_with_a_corrected_base_url_or_concurrency_goes_on_without_force() {
    let sim = common::servers::start_sim(draftgen::sim::SimConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let first = generate(dir.path(), &sim.base_url(), &["--concurrency", "4"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let moved = sim.base_url().replace("127.0.0.1", "localhost");
    let second = generate(dir.path(), &moved, &["--concurrency", "8"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(!stderr(&second).contains("--force"), "{}", stderr(&second));
}

/// An OpenRouter-speaking server that wants a key, sent none: the stop says no key was sent and
/// names the variable, not that a key was rejected.
#[test]
fn a_401_to_requests_without_a_key_names_the_variable_not_a_rejected_key() {
    let sim = common::servers::start_sim(draftgen::sim::SimConfig {
        require_key: true,
        // The model `generate` asks for, so the start's model-list check passes.
        model_name: "m".into(),
        ..draftgen::sim::SimConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = generate(dir.path(), &sim.base_url(), &["--kind", "openrouter"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("OPENROUTER_API_KEY is not set"), "{err}");
    assert!(!err.contains("rejected the API key"), "{err}");
    assert!(!dir.path().join("run").exists(), "no empty run directory");
}
