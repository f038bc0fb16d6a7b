//! `draftgen run`: the whole job from `draftgen.toml` — prepare → generate → build → verify →
//! export. Each step runs the same code as its own command, resumes where it stopped, and is
//! skipped when its output is current: `OUT/steps.json` keeps a stamp of each step's inputs
//! (settings, and the size and time of the files it read), and a step whose stamp still matches
//! and whose output exists is not run again. Then: where everything went and the trainer's next
//! step.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sha2::{Digest, Sha256};

use super::export::{export_specforge, export_speculators, export_vocab, print_lines};
use super::UsageError;
use crate::config::{JobConfig, JobFile, Trainer};
use crate::export::next_step::{self, absolute};
use crate::export::vocab::{self, Rule};

#[derive(clap::Args)]
#[command(after_help = "\
Write the file with `draftgen init`. Paths in it are relative to its directory.
Run again after a stop (Ctrl-C, budget, failures): finished steps are skipped, generate resumes.")]
pub struct Args {
    /// The job file (`draftgen init` writes one).
    #[arg(long, default_value = "draftgen.toml")]
    pub(super) config: PathBuf,
    /// generate's progress display: auto, bar, plain or none.
    #[arg(long, default_value = "auto")]
    pub(super) progress: String,
    /// Run every step, even those whose output is current.
    #[arg(long)]
    pub(super) redo: bool,
    /// Go on to build, verify and export with the answers so far when generate left prompts
    /// without one (a budget stop, failures); the next run resumes generate all the same.
    #[arg(long)]
    pub(super) allow_incomplete: bool,
}

/// Where each step writes, under the job's `out`.
struct Layout {
    out: PathBuf,
    prompts: PathBuf,
    generate_toml: PathBuf,
    run: PathBuf,
    build: PathBuf,
    verify: PathBuf,
    export: PathBuf,
}

impl Layout {
    fn new(out: &Path) -> Layout {
        let out = absolute(out);
        Layout {
            prompts: out.join("prompts.jsonl"),
            generate_toml: out.join("generate.toml"),
            run: out.join("run"),
            build: out.join("build"),
            verify: out.join("verify"),
            export: out.join("export"),
            out,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let file = JobFile::from_file(&args.config).map_err(|e| UsageError(e.to_string()))?;
    file.run
        .validate()
        .map_err(|e| UsageError(format!("{}: {e}", args.config.display())))?;
    // Every relative path in the file (datasets, out, api_key_file) is relative to the file.
    if let Some(dir) = args.config.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::env::set_current_dir(dir)
            .map_err(|e| UsageError(format!("{}: {e}", dir.display())))?;
    }
    // Before anything is written: a job that cannot authenticate stops at once.
    if let Some(message) = file.run.missing_key(|var| std::env::var(var).ok()) {
        return Err(UsageError(message).into());
    }
    let job = &file.job;
    let layout = Layout::new(&job.out);
    std::fs::create_dir_all(&layout.out)
        .map_err(|e| anyhow::anyhow!("{}: {e}", layout.out.display()))?;
    let mut steps = Steps::load(&layout.out.join("steps.json"), args.redo);
    let mut all_ok = true;

    all_ok &= prepare(job, &layout, &mut steps)?;
    if !generate(&file, &layout, &mut steps, &args.progress)? {
        if !args.allow_incomplete {
            eprintln!(
                "\nrun: generate did not finish every prompt (its summary above says why). Fix what it names, \
                 then run `draftgen run` again: it resumes where it stopped. build, verify and export wait for \
                 a complete run (or pass --allow-incomplete)."
            );
            return Ok(ExitCode::from(1));
        }
        eprintln!("run: generate left prompts without an answer; going on with the answers so far (--allow-incomplete)");
        all_ok = false;
    }
    all_ok &= build(job, &layout, &mut steps)?;
    all_ok &= verify(job, &layout, &mut steps)?;
    export(job, &layout, &mut steps)?;
    print_where_everything_went(job, &layout);
    Ok(super::finished(all_ok))
}

/// Run `draftgen ARGS…` in this process (the same parsing and code as typed).
fn draftgen(args: &[OsString]) -> anyhow::Result<bool> {
    let code = super::run_subcommand(args)?;
    Ok(code == ExitCode::SUCCESS)
}

fn os(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

fn prepare(job: &JobConfig, layout: &Layout, steps: &mut Steps) -> anyhow::Result<bool> {
    let files = dataset_files(&job.datasets)?;
    let mut inputs = vec![
        format!("limit={:?}", job.limit),
        format!("limit_per_source={:?}", job.limit_per_source),
    ];
    inputs.extend(files.iter().map(|f| file_stamp(f)));
    let mut argv = os(&[&"prepare", &"--out", &layout.prompts]);
    if let Some(n) = job.limit {
        argv.extend(os(&[&"--limit", &n.to_string()]));
    }
    if let Some(n) = job.limit_per_source {
        argv.extend(os(&[&"--limit-per-source", &n.to_string()]));
    }
    argv.extend(files.iter().map(|f| f.as_os_str().to_os_string()));
    steps.run("prepare", &inputs, &layout.prompts, || draftgen(&argv))
}

/// The dataset paths, directories replaced by the files in them (sorted).
fn dataset_files(datasets: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in datasets {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| UsageError(format!("job.datasets: {}: {e}", path.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            inside.sort();
            files.extend(inside);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(UsageError(format!(
                "job.datasets: {}: no such file or directory",
                path.display()
            ))
            .into());
        }
    }
    Ok(files)
}

/// generate resumes by itself, so it is skipped only after a run that finished every prompt
/// with the same prompts and settings; whether every prompt has an answer.
fn generate(
    file: &JobFile,
    layout: &Layout,
    steps: &mut Steps,
    progress: &str,
) -> anyhow::Result<bool> {
    write_if_changed(&layout.generate_toml, &file.run_toml)?;
    // The settings as parsed: a comment or a [job] edit does not make generate run again, nor
    // does the built-in simulator's new port.
    let mut settings = file.run.clone();
    for endpoint in settings.endpoints.iter_mut().filter(|e| e.builtin_sim) {
        endpoint.base_url.clear();
    }
    let settings = serde_json::to_string(&settings)?;
    let inputs = vec![
        file_stamp(&layout.prompts),
        format!("config={}", hex_sha(settings.as_bytes())),
    ];
    let argv = os(&[
        &"generate",
        &"--prompts",
        &layout.prompts,
        &"--run",
        &layout.run,
        &"--config",
        &layout.generate_toml,
        &"--progress",
        &progress,
    ]);
    let summary = layout.run.join(crate::journal::SUMMARY_FILE);
    steps.run("generate", &inputs, &summary, || draftgen(&argv))
}

fn build(job: &JobConfig, layout: &Layout, steps: &mut Steps) -> anyhow::Result<bool> {
    let inputs = vec![
        file_stamp(&layout.run.join(crate::journal::SUMMARY_FILE)),
        format!("tokenizer={}", job.tokenizer),
        format!("samples_jsonl={}", job.samples_jsonl),
    ];
    let mut argv = os(&[
        &"build",
        &"--model",
        &job.tokenizer,
        &"--run",
        &layout.run,
        &"--out",
        &layout.build,
        &"--prompts",
        &layout.prompts,
    ]);
    if job.samples_jsonl {
        argv.push("--jsonl".into());
    }
    let output = layout.build.join("build.json");
    steps.run("build", &inputs, &output, || draftgen(&argv))
}

fn verify(job: &JobConfig, layout: &Layout, steps: &mut Steps) -> anyhow::Result<bool> {
    let inputs = vec![file_stamp(&layout.build.join("build.json"))];
    let argv = os(&[
        &"verify",
        &"--model",
        &job.tokenizer,
        &"--run",
        &layout.run,
        &"--out",
        &layout.verify,
        &"--prompts",
        &layout.prompts,
    ]);
    let output = layout.verify.join("verify.json");
    steps.run("verify", &inputs, &output, || draftgen(&argv))
}

/// Every trainer's files and its vocabulary, from the build.
fn export(job: &JobConfig, layout: &Layout, steps: &mut Steps) -> anyhow::Result<bool> {
    let inputs = vec![
        file_stamp(&layout.build.join("build.json")),
        format!("draft_vocab_size={}", job.draft_vocab_size),
        format!("trainers={:?}", job.trainers),
    ];
    let done = layout.export.join("export.done");
    steps.run("export", &inputs, &done, || {
        std::fs::create_dir_all(&layout.export)?;
        for trainer in &job.trainers {
            let (rule, dir) = trainer_dirs(*trainer, layout);
            match trainer {
                Trainer::Specforge => {
                    export_specforge(&layout.build, &dir, Some(&layout.run))?;
                }
                Trainer::Speculators => export_speculators(&layout.build, &dir, None)?,
            }
            export_vocab(
                &layout.build,
                job.draft_vocab_size,
                rule,
                &vocab_dir(rule, layout),
                None,
                vec![8192, 16384, 32768, 65536],
            )?;
        }
        std::fs::write(&done, "")?;
        Ok(true)
    })
}

fn trainer_dirs(trainer: Trainer, layout: &Layout) -> (Rule, PathBuf) {
    match trainer {
        Trainer::Specforge => (Rule::Specforge, layout.export.join("specforge")),
        Trainer::Speculators => (Rule::Speculators, layout.export.join("speculators")),
    }
}

fn vocab_dir(rule: Rule, layout: &Layout) -> PathBuf {
    layout.export.join(match rule {
        Rule::Specforge => "vocab-specforge",
        Rule::Speculators => "vocab-speculators",
    })
}

fn print_where_everything_went(job: &JobConfig, layout: &Layout) {
    println!("\nwhere everything went ({}):", layout.out.display());
    for (what, path) in [
        ("prompts", &layout.prompts),
        ("run", &layout.run),
        ("samples", &layout.build),
        ("verify", &layout.verify.join("report.html")),
        ("exports", &layout.export),
    ] {
        println!("  {what:<8} {}", path.display());
    }
    for trainer in &job.trainers {
        println!();
        let (rule, dir) = trainer_dirs(*trainer, layout);
        let vocab = vocab_dir(rule, layout);
        match trainer {
            Trainer::Specforge => print_lines(&next_step::specforge_config(
                Some(&dir.join("specforge.jsonl")),
                Some(&vocab.join(vocab::SPECFORGE_FILE)),
            )),
            Trainer::Speculators => print_lines(&next_step::speculators_command(
                Some(&dir.join("prepared")),
                Some((
                    &vocab.join(vocab::D2T_NPY),
                    &vocab.join(vocab::T2D_NPY),
                    job.draft_vocab_size,
                )),
            )),
        }
    }
}

/// Write `text` to `path` unless it already holds it (its time then stays, and so do stamps).
fn write_if_changed(path: &Path, text: &str) -> anyhow::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn hex_sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A file as a step's input: its path, size and modification time (a rewrite changes them).
fn file_stamp(path: &Path) -> String {
    let meta = std::fs::metadata(path).ok();
    let size = meta.as_ref().map(|m| m.len());
    let modified = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos());
    format!("{} {size:?} {modified:?}", path.display())
}

/// `OUT/steps.json`: per step, the stamp of the inputs it last ran to the end on.
struct Steps {
    path: PathBuf,
    stamps: BTreeMap<String, Stamp>,
    redo: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Stamp {
    inputs: String,
    /// Whether the step said all was well (a skipped step repeats its verdict).
    ok: bool,
}

impl Steps {
    fn load(path: &Path, redo: bool) -> Steps {
        let stamps = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Steps {
            path: path.to_path_buf(),
            stamps,
            redo,
        }
    }

    /// Run `step` unless its output exists and was made from these inputs; whether it went
    /// well (a skipped step's earlier verdict). A step that could not finish is not stamped.
    fn run(
        &mut self,
        step: &str,
        inputs: &[String],
        output: &Path,
        work: impl FnOnce() -> anyhow::Result<bool>,
    ) -> anyhow::Result<bool> {
        let stamp = hex_sha(inputs.join("\n").as_bytes());
        if let Some(done) = self.stamps.get(step) {
            if !self.redo && done.inputs == stamp && output.exists() {
                let verdict = if done.ok {
                    ""
                } else {
                    " (it reported problems: see above or its files)"
                };
                eprintln!("── {step}: up to date, skipped{verdict}");
                return Ok(done.ok);
            }
        }
        eprintln!("── {step}");
        self.stamps.remove(step);
        self.save()?;
        let ok = work()?;
        // A generate that left prompts without an answer is not done: the next run resumes it.
        if ok || step != "generate" {
            self.stamps
                .insert(step.to_string(), Stamp { inputs: stamp, ok });
            self.save()?;
        }
        Ok(ok)
    }

    fn save(&self) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&self.stamps)?;
        std::fs::write(&self.path, text + "\n")
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.path.display()))
    }
}
