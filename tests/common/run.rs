//! A run's directory and the `draftgen` commands run on it: the set-up every end-to-end test
//! repeats (a prompts file, `generate` against a server, `build`, reading the journal back).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The `draftgen` binary cargo built for this test.
pub const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

/// A fresh temporary directory holding `prompts.jsonl`, the run directory `run/` and whatever
/// the test writes beside them (the layout `draftgen demo --out` writes too); removed when
/// dropped.
pub struct RunDir {
    dir: tempfile::TempDir,
}

impl RunDir {
    pub fn new() -> RunDir {
        RunDir {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The temporary directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `name` inside the temporary directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn prompts(&self) -> PathBuf {
        self.join("prompts.jsonl")
    }

    /// The run directory (`generate --run`, `build --run`).
    pub fn run(&self) -> PathBuf {
        self.join("run")
    }

    /// Write `prompts.jsonl`, one JSON value a line; returns its path.
    pub fn write_prompts(&self, prompts: impl IntoIterator<Item = Value>) -> PathBuf {
        let text: String = prompts.into_iter().map(|p| format!("{p}\n")).collect();
        let path = self.prompts();
        std::fs::write(&path, text).expect("write prompts.jsonl");
        path
    }

    /// `draftgen generate` of `prompts.jsonl` into `run/` against `base_url`, without a progress
    /// display, an OpenRouter key from the environment or a terminal; add the test's options.
    pub fn generate(&self, base_url: &str) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["generate", "--prompts"])
            .arg(self.prompts())
            .arg("--run")
            .arg(self.run())
            .args(["--base-url", base_url, "--progress", "none"])
            .env_remove("OPENROUTER_API_KEY")
            .stdin(Stdio::null());
        cmd
    }

    /// `draftgen demo` into the directory (`draftgen run` on the bundled samples against the sim:
    /// `draftgen.toml`, `datasets/`, `prompts.jsonl`, `run/`, `build/`, the verify report, the
    /// exports and `samples.jsonl` there), without a progress display; add the test's options.
    pub fn demo(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["demo", "--progress", "none", "--out"])
            .arg(self.path())
            .stdin(Stdio::null());
        cmd
    }

    /// `draftgen build --model MODEL` of `run/` into `out` (a name inside the directory).
    pub fn build(&self, model: &str, out: &str) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["build", "--model", model, "--run"])
            .arg(self.run())
            .arg("--out")
            .arg(self.join(out));
        cmd
    }

    /// Every record of `run/`'s journal.
    pub fn journal(&self) -> Vec<Value> {
        journal(&self.run())
    }
}

impl Default for RunDir {
    fn default() -> Self {
        RunDir::new()
    }
}

/// Every record of a run's journal, segment after segment.
pub fn journal(run: &Path) -> Vec<Value> {
    let dir = run.join("journal");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a journal directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    segments.sort();
    segments.iter().flat_map(|s| jsonl(s)).collect()
}

/// The JSON values of a JSON-lines file.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

/// Run a command to its end, its output captured.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run draftgen")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status, stdout and stderr, for a failed assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
