//! `draftgen demo`: `draftgen run` on the bundled samples against an in-process simulator. It
//! writes the samples and a `draftgen.toml` (the file `init` writes, filled for the simulator)
//! into its directory, starts the simulator and runs the job — prepare → generate → build →
//! verify → export — so the same file, edited, runs against a real endpoint.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::demo_model;
use super::init::{job_toml, JobTemplate};
use super::model_args::request_model_name;
use super::UsageError;
use crate::api::ServerKind;
use crate::config::JobFile;
use crate::dataset;
use crate::engine::ProgressMode;
use crate::server::{ServerShape, Versions};
use crate::sim::{self, FaultRates, Flavor, SimConfig};

#[derive(clap::Args)]
pub struct Args {
    /// Where the demo writes its datasets, draftgen.toml and the job's files. Running the demo
    /// again resumes the same job (nothing is generated twice).
    #[arg(long, default_value = "draftgen-demo")]
    out: PathBuf,
    /// The simulated target model: a directory, a known name, or any family by its profile name
    /// or a model id of it (`qwen3-coder`, `openai/gpt-oss-120b`), whose tokenizer files are
    /// looked for in DRAFTGEN_ASSETS, ../shared/assets and the Hugging Face cache.
    #[arg(long, default_value = "kimi-k2.5")]
    model: String,
    /// A directory holding the tokenizer files of the family `--model` names (used instead of
    /// looking for them).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// Which server shape the simulator answers in.
    #[arg(long, value_enum, default_value = "openrouter")]
    flavor: Flavor,
    /// Simulated transient failures (429, 5xx, mid-stream errors), each at this rate, to show
    /// retries at work.
    #[arg(long, default_value_t = 0.03)]
    fault_rate: f64,
    /// Progress display.
    #[arg(long, value_enum, default_value = "auto")]
    progress: ProgressMode,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(0.0..=0.5).contains(&args.fault_rate) {
        return Err(UsageError("--fault-rate must be between 0 and 0.5".into()).into());
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.out.display()))?;
    // `run` works from the config's directory: every path here is absolute.
    let out = args.out.canonicalize()?;
    // `--model` means one model everywhere: the simulator's tokenizer and template, the model the
    // requests name, and the tokenizer the samples are rebuilt with.
    let model = demo_model::resolve(&args.model, args.tokenizer.as_deref(), &out)?;
    let (model_dir, profile) = (model.dir, model.profile);
    let model_name = request_model_name(&args.model);
    dataset::samples::write_bundled(&out.join("datasets"))?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // The simulator answers on the runtime's threads while the job runs on this one.
    let sim = runtime.block_on(sim::spawn(SimConfig {
        flavor: args.flavor,
        seed: 2026,
        model_dir: Some(model_dir),
        profile: Some(profile.name.clone()),
        model_name: model_name.clone(),
        faults: FaultRates {
            rate_limited: args.fault_rate,
            server_error: args.fault_rate,
            mid_stream: args.fault_rate,
            ..FaultRates::default()
        },
        ..SimConfig::default()
    }))?;
    eprintln!(
        "sim       {:?} flavour at {} (model {})",
        args.flavor,
        sim.base_url(),
        profile.name
    );
    let config = out.join("draftgen.toml");
    let text = demo_job_file(&args, &model.tokenizer, &sim.base_url(), &model_name)?;
    std::fs::write(&config, text).map_err(|e| anyhow::anyhow!("{}: {e}", config.display()))?;
    eprintln!("job       {}", config.display());

    let progress = match args.progress {
        ProgressMode::Auto => "auto",
        ProgressMode::Bar => "bar",
        ProgressMode::Plain => "plain",
        ProgressMode::None => "none",
    };
    let finished = super::run::run(super::run::Args {
        config: config.clone(),
        progress: progress.to_string(),
        redo: false,
        // Prompts the injected faults left without an answer do not hide the rest of the job;
        // the next demo run resumes them.
        allow_incomplete: true,
    });
    runtime.block_on(sim.shutdown())?;
    let code = finished?;
    keep_samples_beside(&out)?;
    print_next(&config);
    Ok(code)
}

/// The build's `samples.jsonl`, also at the top of the demo's directory (where the demo has
/// always put it).
fn keep_samples_beside(out: &Path) -> anyhow::Result<()> {
    let built = out.join("build/samples.jsonl");
    if built.is_file() {
        std::fs::copy(&built, out.join("samples.jsonl"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", built.display()))?;
    }
    Ok(())
}

/// `init`'s job file for the simulator: its URL and server kind, the `--model` everywhere, the
/// bundled samples, a small budget, and settings that suit a fast local server.
fn demo_job_file(
    args: &Args,
    tokenizer: &str,
    base_url: &str,
    model_name: &str,
) -> anyhow::Result<String> {
    let shape = args.flavor.shape();
    let datasets = ["datasets".to_string()];
    let mut text = job_toml(&JobTemplate {
        datasets: &datasets,
        tokenizer,
        out: ".",
        endpoint_name: "sim",
        base_url,
        kind: shape.kind,
        model: model_name,
    });
    for (table, key, value) in demo_settings(shape) {
        text = set_key(&text, table, key, &value)?;
    }
    let text = format!("{DEMO_HEADER}{text}");
    // What the demo writes, run reads: checked before it is written.
    JobFile::from_toml(&text, Path::new("draftgen.toml"))
        .and_then(|file| file.run.validate())
        .map_err(|e| anyhow::anyhow!("the demo's job file is invalid: {e}"))?;
    Ok(text)
}

const DEMO_HEADER: &str = "\
# Written by `draftgen demo` for its in-process simulator (rewritten on each demo run).
# The same job against a real endpoint: set base_url, kind and model, delete builtin_sim, set out
# to a new directory, then `draftgen run --config` this file.

";

/// `(table, key, value)` lines the demo sets in `init`'s file (`""`: before the first table).
fn demo_settings(shape: &ServerShape) -> Vec<(&'static str, &'static str, String)> {
    let mut settings = vec![
        ("", "grace_s", "5".to_string()),
        (
            "[job]",
            "samples_jsonl",
            "true".to_string(),
        ),
        (
            "[[endpoints]]",
            "builtin_sim",
            "true                        # the demo's simulator: its new port each run is no change of settings"
                .to_string(),
        ),
        // What the simulator does (no spaces around special tokens unless configured), rather
        // than the kind's default (true for vLLM).
        (
            "[[endpoints]]",
            "spaces_around_special_tokens",
            SimConfig::default().spaces_around_special_tokens.to_string(),
        ),
        // The bundled samples' answers use a few hundred distinct ids: a draft vocabulary of
        // 32,000 would be nearly all padding.
        ("[job]", "draft_vocab_size", "256".to_string()),
        ("[request]", "max_tokens", "2048".to_string()),
        ("[budget]", "max_cost_usd", "1.0".to_string()),
        ("[concurrency]", "initial", "32".to_string()),
        ("[concurrency]", "max", "64".to_string()),
        ("[retry]", "base_ms", "50".to_string()),
    ];
    // A shape of an older line than the kind's newest (vLLM's 0.11–0.2x): the run records the
    // line's first version.
    if let Versions::Minors { major, first, .. } = shape.versions {
        let version = format!("\"{major}.{first}\"");
        settings.push(("[[endpoints]]", "server_version", version));
    }
    // vLLM's newest line also returns its own token ids (with non-streamed answers), which
    // reconstruction then checks itself against.
    let server_ids = shape.kind == ServerKind::Vllm && shape.versions == Versions::Newest;
    settings.push(("[request]", "stream", (!server_ids).to_string()));
    if server_ids {
        settings.push(("[request]", "server_token_ids", "true".to_string()));
    }
    settings
}

/// `text` with `key`'s line in `table` (`""`: before the first table header), commented out or
/// not, replaced by `key = value`; added at the table's end when it has no such line.
fn set_key(text: &str, table: &str, key: &str, value: &str) -> anyhow::Result<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut current = "";
    let (mut found, mut last) = (None, None);
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with('[') {
            current = line.split('#').next().unwrap_or("").trim();
        }
        if current != table {
            continue;
        }
        if !line.trim().is_empty() {
            last = Some(i);
        }
        let bare = line.strip_prefix("# ").unwrap_or(line);
        if found.is_none() && bare.split_once('=').map(|(k, _)| k.trim()) == Some(key) {
            found = Some(i);
        }
    }
    let new_line = format!("{key} = {value}");
    match (found, last) {
        // A set line keeps its comment, unless the new value brings its own.
        (Some(i), _) => {
            // After a commented-out line's own `# `.
            let skip = lines[i].strip_prefix("# ").map_or(0, |_| 2);
            lines[i] = match lines[i][skip..].find("  #").map(|at| at + skip) {
                Some(at) if !value.contains('#') => {
                    let width = (at + 2).max(new_line.len() + 2);
                    format!("{new_line:width$}{}", lines[i][at..].trim_start())
                }
                _ => new_line,
            };
        }
        (None, Some(i)) => lines.insert(i + 1, new_line),
        (None, None) => anyhow::bail!("the job template has no {table} table"),
    }
    Ok(lines.join("\n") + "\n")
}

fn print_next(config: &Path) {
    eprintln!(
        "\nrun the demo's job again with `draftgen run --config {}` (finished steps are skipped); \
         edit that file for a real endpoint, or start your own with `draftgen init --datasets DIR --model ID`.",
        config.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_fills_inits_file_for_each_flavour() {
        for flavor in Flavor::ALL {
            let args = Args {
                out: PathBuf::from("draftgen-demo"),
                model: "kimi-k2.5".into(),
                tokenizer: None,
                flavor,
                fault_rate: 0.0,
                progress: ProgressMode::None,
            };
            let text = demo_job_file(
                &args,
                "kimi-k2.5",
                "http://127.0.0.1:9/v1",
                "moonshotai/kimi-k2.5",
            )
            .unwrap_or_else(|e| panic!("{flavor:?}: {e}"));
            let file = JobFile::from_toml(&text, Path::new("draftgen.toml")).unwrap();
            let endpoint = &file.run.endpoints[0];
            assert!(endpoint.builtin_sim, "{text}");
            assert_eq!(endpoint.kind, flavor.shape().kind);
            assert_eq!(file.run.budget.max_cost_usd, Some(1.0));
            assert_eq!(file.run.grace_s, 5.0);
            assert!(file.job.samples_jsonl);
            assert_eq!(file.job.out, PathBuf::from("."));
        }
    }

    #[test]
    fn set_key_replaces_a_commented_line_in_its_own_table_only() {
        let text = "a = 1\n[x]\n# k = 1\n\n[y]\nk = 2\n";
        assert_eq!(
            set_key(text, "[x]", "k", "3").unwrap(),
            "a = 1\n[x]\nk = 3\n\n[y]\nk = 2\n"
        );
        assert_eq!(
            set_key(text, "", "b", "4").unwrap(),
            "a = 1\nb = 4\n[x]\n# k = 1\n\n[y]\nk = 2\n"
        );
        assert!(set_key(text, "[z]", "k", "1").is_err());
        // A comment stays in its column.
        let text = "[x]\n# k = 1      # why\nj = 22   # how\n";
        let text = set_key(text, "[x]", "k", "2").unwrap();
        assert_eq!(
            set_key(&text, "[x]", "j", "3").unwrap(),
            "[x]\nk = 2        # why\nj = 3    # how\n"
        );
    }
}
