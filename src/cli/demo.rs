//! `draftgen demo`: the whole pipeline on the bundled samples against an in-process simulator —
//! prepare → generate → reconstruct → token samples — and where everything went.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::api::ServerKind;
use crate::build::jsonl_samples::{build_samples, BuildReport};
use crate::config::{EndpointConfig, RunConfig};
use crate::dataset::{self, PrepareOptions, Prompt};
use crate::engine::{self, ProgressMode, RunOptions, RunSummary, Shutdown};
use crate::journal::RunDir;
use crate::model::{assets, Profile};
use crate::reconstruct::ReconstructOptions;
use crate::server::{ServerShape, Versions};
use crate::sim::{self, FaultRates, Flavor, SimConfig};

use super::model_args::{request_model_name, ModelArgs};
use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    /// Where the demo writes its datasets, prompts, run directory and samples. Running the demo
    /// again resumes the same run (nothing is generated twice).
    #[arg(long, default_value = "draftgen-demo")]
    out: PathBuf,
    /// The simulated target model's tokenizer and template (directory or known name).
    #[arg(long, default_value = "kimi-k2.5")]
    model: String,
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
    // `--model` means one model everywhere: the simulator's tokenizer and template, the model the
    // requests name, and the profile the samples are rebuilt with.
    let model_dir = assets::resolve_model(&args.model).map_err(|e| UsageError(e.to_string()))?;
    let model_args = ModelArgs {
        model: args.model.clone(),
        profile: None,
        chat_template: None,
    };
    let profile = model_args.load_from(&model_dir)?;
    let model_name = request_model_name(&args.model);
    std::fs::create_dir_all(&args.out)?;

    let prompts = prepare(&args.out)?;
    let summary = generate(&args, &model_dir, &profile, &model_name, prompts)?;
    let built = build(&args, &profile)?;

    print_locations(&args.out);
    let ok = summary.all_ok() && built.failed.is_empty();
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// 1. prepare: the bundled sample files → `prompts.jsonl`, read back.
fn prepare(out: &Path) -> anyhow::Result<Vec<Prompt>> {
    let inputs = dataset::samples::write_bundled(&out.join("datasets"))?;
    let prepared = dataset::prepare(
        &inputs,
        &PrepareOptions {
            out: out.join("prompts.jsonl"),
            ..PrepareOptions::default()
        },
    )?;
    eprintln!(
        "prepare   {} prompts from {} bundled sample files ({} duplicates, {} skipped, {} malformed)",
        prepared.prompts(),
        inputs.len(),
        prepared.sources.iter().map(|s| s.duplicates).sum::<u64>(),
        prepared.sources.iter().map(|s| s.skipped_total()).sum::<u64>(),
        prepared.malformed(),
    );
    Ok(dataset::read_prompts(out.join("prompts.jsonl"))?)
}

/// 2. generate, against a simulator in this process.
fn generate(
    args: &Args,
    model_dir: &Path,
    profile: &Profile,
    model_name: &str,
    prompts: Vec<Prompt>,
) -> anyhow::Result<RunSummary> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let summary = runtime.block_on(async {
        let sim = sim::spawn(SimConfig {
            flavor: args.flavor,
            seed: 2026,
            model_dir: Some(model_dir.to_path_buf()),
            profile: Some(profile.name.clone()),
            model_name: model_name.to_string(),
            faults: FaultRates {
                rate_limited: args.fault_rate,
                server_error: args.fault_rate,
                mid_stream: args.fault_rate,
                ..FaultRates::default()
            },
            ..SimConfig::default()
        })
        .await?;
        eprintln!(
            "sim       {:?} flavour at {} (model {})",
            args.flavor,
            sim.base_url(),
            profile.name
        );
        let config = demo_config(&sim.base_url(), args.flavor.shape(), model_name);
        let shutdown = Shutdown::new();
        let ctrl_c = tokio::spawn(forward_ctrl_c(shutdown.clone()));
        let summary = engine::run_with(
            &config,
            prompts,
            &args.out.join("run"),
            shutdown,
            RunOptions {
                progress: args.progress,
                ..RunOptions::default()
            },
        )
        .await;
        ctrl_c.abort();
        sim.shutdown().await?;
        anyhow::Ok(summary?)
    })?;
    let s = &summary.summary;
    eprintln!(
        "generate  {} succeeded, {} failed, {} skipped of {} prompts; {} attempts, {} retried (all sessions)",
        s.succeeded,
        s.failed,
        s.skipped,
        summary.prompts,
        s.attempts,
        s.attempts
            .saturating_sub(s.succeeded + s.failed + s.skipped),
    );
    Ok(summary)
}

/// 3. reconstruct every success into exact token ids, the way the run says its server shaped
///    them; an endpoint recorded as `generic` is the simulator's flavour, which the demo knows.
fn build(args: &Args, profile: &Profile) -> anyhow::Result<BuildReport> {
    let run = args.out.join("run");
    let mut options = reconstruct_options(&run)?;
    if options.kind == ServerKind::Generic {
        let shape = args.flavor.shape();
        options.kind = shape.kind;
        options.server_version = (!shape.version.is_empty()).then(|| shape.version.to_string());
    }
    let built = build_samples(
        profile,
        &run.join("journal"),
        &options,
        &args.out.join("samples.jsonl"),
    )?;
    eprintln!(
        "build     {} samples from {} successful records ({} prompt + {} completion tokens; {} with warnings, {} failed)",
        built.samples,
        built.records,
        built.prompt_tokens,
        built.completion_tokens,
        built.with_warnings,
        built.failed.len(),
    );
    let classes: Vec<String> = built
        .classes
        .iter()
        .map(|(class, n)| format!("{n} {class}"))
        .collect();
    eprintln!("fidelity  {}", classes.join(", "));
    for failure in built.failed.iter().take(5) {
        eprintln!("  could not reconstruct {failure}");
    }
    Ok(built)
}

/// How the run's manifest says its server shaped text (see
/// [`ReconstructOptions::for_run`]).
fn reconstruct_options(run: &Path) -> anyhow::Result<ReconstructOptions> {
    let manifest = RunDir::new(run).read_manifest()?;
    Ok(manifest.map_or_else(ReconstructOptions::default, |m| {
        ReconstructOptions::for_run(&m)
    }))
}

/// One endpoint of the flavour's kind (the simulator needs no key), a modest concurrency, short
/// timeouts; vLLM's newest line also returns its own token ids, which reconstruction then checks
/// itself against.
fn demo_config(base_url: &str, shape: &ServerShape, model_name: &str) -> RunConfig {
    let mut config = RunConfig::default();
    // An OpenRouter endpoint asks for a key; the OpenRouter-shaped simulator is declared as a
    // generic server, and `build` reads it in the flavour's shape.
    let kind = match shape.kind {
        ServerKind::OpenRouter => ServerKind::Generic,
        kind => kind,
    };
    let mut endpoint = EndpointConfig::new("sim", base_url, kind);
    // The simulator listens on a new port each run: that is not a change of settings.
    endpoint.builtin_sim = true;
    // Say what the simulator does (no spaces around special tokens unless configured), rather
    // than leave it to the kind's default (true for vLLM).
    endpoint.spaces_around_special_tokens = Some(SimConfig::default().spaces_around_special_tokens);
    // A shape of an older line than the kind's newest (vLLM's 0.11–0.2x): the run records the
    // line's first version.
    if let Versions::Minors { major, first, .. } = shape.versions {
        endpoint.server_version = Some(format!("{major}.{first}"));
    }
    config.endpoints = vec![endpoint];
    config.request.model = model_name.to_string();
    config.request.max_tokens = Some(2048);
    config.request.stream = true;
    config.request.server_kind = kind;
    if kind == ServerKind::Vllm && shape.versions == Versions::Newest {
        config.request.server_token_ids = true;
        config.request.stream = false; // ids come with non-streamed answers
    }
    config.concurrency.initial = 32;
    config.concurrency.max = 64;
    config.retry.base_ms = 50;
    config.grace_s = 5.0;
    config
}

fn print_locations(out: &Path) {
    let show = |what: &str, name: &str| eprintln!("  {what:<9} {}", out.join(name).display());
    eprintln!("\nwhere everything went:");
    show("datasets", "datasets/");
    show("prompts", "prompts.jsonl");
    show("run", "run/   (manifest.json, journal/, summary.json)");
    show(
        "samples",
        "samples.jsonl   (id, prompt_ids, completion_ids, loss_mask, warnings)",
    );
    eprintln!(
        "\nnext, on your own datasets and endpoint: `draftgen init --datasets DIR --model ID` writes a commented \
         draftgen.toml (routing, budget, timeouts); `draftgen run` then does the whole job, prepare to trainer files."
    );
}

async fn forward_ctrl_c(shutdown: Shutdown) {
    loop {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        shutdown.interrupt();
    }
}
