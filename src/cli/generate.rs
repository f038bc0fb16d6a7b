//! `draftgen generate`: prompts + endpoint settings → a run directory (see `engine`).
//!
//! Exit codes: 0 every prompt succeeded (or was skipped); 1 some failed, the run was stopped
//! (budget, Ctrl-C, 401/402) or could not run; 2 bad usage or config.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::{finished, print_json, UsageError};
use crate::api::{ErrorClass, ServerKind};
use crate::config::{no_key_message, Overrides, RunConfig, OPENROUTER_KEY_ENV};
use crate::engine::{self, class_name, ProgressMode, RunOptions, RunSummary, Shutdown, StopReason};

#[derive(clap::Args)]
#[command(after_help = "\
Keys come from OPENROUTER_API_KEY (OpenRouter endpoints) or --api-key-file, never from the config file.
Resume: run the same command again; finished prompts are skipped, transient failures retried.
Credit: for OpenRouter endpoints the key's remaining credit is checked at start; if the projected
cost exceeds it the run is refused unless --max-cost-usd is at or below the credit, or --force.
Ctrl-C once: stop scheduling, let in-flight requests finish (--grace), write the summary.
Ctrl-C twice: abort at once (everything already journaled is kept).")]
pub struct Args {
    /// prompts.jsonl written by `draftgen prepare` (one Prompt per line).
    #[arg(long)]
    prompts: PathBuf,
    /// Run directory (created, or resumed if it exists).
    #[arg(long)]
    run: PathBuf,
    /// Run configuration (TOML; `draftgen init` writes a commented one, README shows it); flags
    /// override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// One endpoint's base URL up to /v1 (replaces the config's endpoints).
    #[arg(long, env = "DRAFTGEN_BASE_URL")]
    base_url: Option<String>,
    /// Server kind of --base-url: openrouter, vllm, sglang, llamacpp, generic (default: guessed).
    #[arg(long)]
    kind: Option<ServerKind>,
    /// The server software's version (e.g. 0.11.0 for vLLM), recorded in the run's manifest.
    #[arg(long, value_name = "VERSION")]
    server_version: Option<String>,
    /// Whether the server puts a space on each side of every special token (vLLM's
    /// spaces_between_special_tokens). Default: true for --kind vllm, false otherwise. Recorded
    /// in the manifest; for vLLM also sent as `spaces_between_special_tokens`.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    spaces_around_special_tokens: Option<bool>,
    /// Model id (e.g. moonshotai/kimi-k2.5, with :exacto/:nitro suffixes as wanted).
    #[arg(long, env = "DRAFTGEN_MODEL")]
    model: Option<String>,
    /// File holding the API key (first line).
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// Requests in flight to start from: the first 8 go out at once, doubling every round trip
    /// up to N; from there the number adapts to what the server accepts (down when it turns
    /// requests away with 429/503, back up while it does not), never above --max-concurrency,
    /// which is raised to at least N.
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Most requests ever in flight, however well the server keeps up.
    #[arg(long, value_name = "N")]
    max_concurrency: Option<usize>,
    /// Requests per minute, all endpoints together.
    #[arg(long)]
    rpm: Option<u32>,
    /// Stop scheduling when the run (all sessions) would cost more than this. Each request in
    /// flight holds a bound of its cost (the run's dearest request so far; before any answer the
    /// price table or the model's published price), so together they stay under it.
    #[arg(long)]
    max_cost_usd: Option<f64>,
    /// max_tokens of every request.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Stream answers (SSE).
    #[arg(long)]
    stream: bool,
    /// With streaming: also keep each answer's raw SSE chunks, compressed, in the run's
    /// streams.zst (one zstd frame per answer, keyed by prompt id and attempt; `zstd -dc` gives
    /// JSON lines), for auditing what the stream itself looked like.
    #[arg(long)]
    keep_stream: bool,
    /// Store the server's own completion ids with each record (vLLM/SGLang `return_token_ids`,
    /// llama.cpp `return_tokens` + `verbose`; SGLang and llama.cpp only without --stream).
    #[arg(long)]
    server_token_ids: bool,
    /// Seconds in-flight requests get to finish after a stop.
    #[arg(long)]
    grace: Option<f64>,
    /// Largest answer read, in MB: a body, one SSE line or event, an answer assembled from a
    /// stream (default 32). A larger one is an `over_limit` failure; bounds memory per request.
    #[arg(long, value_name = "MB")]
    max_answer_mb: Option<u64>,
    /// Resume even though settings changed; start even if the projected cost exceeds the credit.
    #[arg(long)]
    force: bool,
    /// auto, bar, plain or none.
    #[arg(long, default_value = "auto")]
    progress: ProgressMode,
    /// Seconds between plain progress lines.
    #[arg(long, default_value_t = 10.0)]
    progress_every: f64,
    /// Print the run summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Stop at the first line of --prompts that is not a prompt, before sending anything
    /// (default: report each such line with file:line, skip it and run the rest).
    #[arg(long)]
    strict: bool,
    /// `one`: answer each prompt once (after its last message). `all`: regenerate every assistant
    /// turn of each conversation in order, each against the regenerated history (one journal
    /// record per turn; `build` makes one sample per conversation).
    #[arg(long, value_enum, default_value = "one")]
    turns: Turns,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Turns {
    One,
    All,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = run_config(&args)?;
    let input = read_input(&args)?;
    let options = RunOptions {
        progress: args.progress,
        plain_every: Duration::from_secs_f64(args.progress_every.max(0.1)),
        keep_stream: args.keep_stream,
    };
    let new_run = !args.run.exists();
    let result = run_on_one_thread(&config, input, &args.run, options)?;
    let summary = match result {
        Ok(summary) => summary,
        Err(e) if e.is_usage() => return Err(UsageError(e.to_string()).into()),
        // The start's key check met a 401: with no key sent, that is what to fix.
        Err(engine::EngineError::KeyRejected(message)) => {
            // Nothing was sent: a directory this command made holds no record, and would only
            // look like a run.
            if new_run {
                let _ = std::fs::remove_dir_all(&args.run);
            }
            return Err(match keyless(&config, None) {
                Some(no_key) => anyhow::anyhow!("{no_key}: the endpoint answers 401 without one"),
                None => anyhow::anyhow!("{message}"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    print_human(&summary, &config);
    if let Some(hint) = not_found_hint(&summary, &config) {
        eprintln!("{hint}");
    }
    if args.json {
        print_json(&summary)?;
    }
    Ok(finished(summary.all_ok()))
}

/// The run's configuration: the file (if any) under the command line's settings, validated.
fn run_config(args: &Args) -> anyhow::Result<RunConfig> {
    let mut config = match &args.config {
        Some(path) => RunConfig::from_file(path).map_err(|e| UsageError(e.to_string()))?,
        None => RunConfig::default(),
    };
    config.apply(Overrides {
        base_url: args.base_url.clone(),
        kind: args.kind,
        model: args.model.clone(),
        api_key_file: args.api_key_file.clone(),
        concurrency: args.concurrency,
        max_concurrency: args.max_concurrency,
        rpm: args.rpm,
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        stream: args.stream.then_some(true),
        server_token_ids: args.server_token_ids.then_some(true),
        server_version: args.server_version.clone(),
        spaces_around_special_tokens: args.spaces_around_special_tokens,
        grace_s: args.grace,
        max_answer_mb: args.max_answer_mb,
        force: args.force,
    });
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    // Before the run directory exists: a run that cannot authenticate leaves nothing behind.
    if let Some(message) = config.missing_key(|var| std::env::var(var).ok()) {
        return Err(UsageError(message).into());
    }
    Ok(config)
}

/// Why the session stopped; a 401 from an endpoint that was sent no key says so, rather than
/// that a key was rejected.
fn stop_message(stop: &StopReason, config: &RunConfig) -> String {
    match stop {
        StopReason::Fatal {
            class: ErrorClass::Unauthorized,
            endpoint,
            message,
        } => match keyless(config, Some(endpoint)) {
            Some(no_key) => {
                format!("endpoint {endpoint:?} answered 401 ({message}): {no_key}, then resume")
            }
            None => stop.explain(),
        },
        _ => stop.explain(),
    }
}

/// [`no_key_message`] for the first endpoint (named `endpoint`, when given) that is sent no key.
fn keyless(config: &RunConfig, endpoint: Option<&str>) -> Option<String> {
    let unset = |var: &str| std::env::var(var).map_or(true, |k| k.trim().is_empty());
    config
        .endpoints
        .iter()
        .filter(|e| endpoint.is_none_or(|name| name == e.name) && e.api_key_file.is_none())
        .find_map(|e| {
            let var = e.api_key_env.as_deref().unwrap_or(OPENROUTER_KEY_ENV);
            unset(var).then(|| no_key_message(var, &e.name))
        })
}

/// A session that met 404s: the URLs it posted to, since a wrong base URL is the usual cause.
fn not_found_hint(summary: &RunSummary, config: &RunConfig) -> Option<String> {
    let stopped_by_404 = matches!(&summary.stop, StopReason::Unreachable { first_error, .. } if first_error.contains("HTTP 404"));
    let met_404 = summary
        .first_errors
        .values()
        .any(|message| message.contains("HTTP 404"));
    if !(stopped_by_404 || met_404) {
        return None;
    }
    let urls: Vec<String> = config
        .endpoints
        .iter()
        .map(|e| format!("POST {}/chat/completions", e.base_url.trim_end_matches('/')))
        .collect();
    Some(format!(
        "the server answered 404 (not found) for {}: --base-url must be the API root that /chat/completions is appended to (usually ending in /v1)",
        urls.join(", ")
    ))
}

/// What `generate` runs: prompts, or (`--turns all`) conversations run turn by turn.
enum Input {
    Prompts(engine::PromptList),
    Conversations(Vec<crate::dataset::Prompt>),
}

/// The prompts file read as `--turns` asks (lines that are not prompts are said on stderr).
fn read_input(args: &Args) -> anyhow::Result<Input> {
    match args.turns {
        Turns::One => {
            let prompts = if args.strict {
                engine::PromptList::read_jsonl_strict(&args.prompts)
            } else {
                engine::PromptList::read_jsonl(&args.prompts)
            }
            .map_err(|e| UsageError(e.to_string()))?;
            for line in prompts.skipped_lines() {
                eprintln!("{line}");
            }
            Ok(Input::Prompts(prompts))
        }
        Turns::All => Ok(Input::Conversations(
            engine::turns::read_prompts(&args.prompts).map_err(|e| UsageError(e.to_string()))?,
        )),
    }
}

/// Run `input` on a runtime of one thread, Ctrl-C forwarded to the run's shutdown.
fn run_on_one_thread(
    config: &RunConfig,
    input: Input,
    run_dir: &Path,
    options: RunOptions,
) -> anyhow::Result<Result<RunSummary, engine::EngineError>> {
    let shutdown = Shutdown::new();
    // One thread drives every request: they mostly wait, and a second runtime worker only added
    // futex wake-ups and work stealing (0.36 vs 0.46 CPU-s for 10,000 requests, BENCHMARKS.md).
    // The journal has its own thread (fsync blocks).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let signals = tokio::spawn(forward_ctrl_c(shutdown.clone()));
        let result = match input {
            Input::Prompts(prompts) => {
                engine::run_list(config, prompts, run_dir, shutdown, options).await
            }
            Input::Conversations(conversations) => {
                engine::turns::run_turns(config, conversations, run_dir, shutdown, options).await
            }
        };
        signals.abort();
        result
    });
    // Do not wait for stuck blocking work (e.g. a hung DNS lookup) on the way out.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(result)
}

/// First Ctrl-C stops, the second aborts.
async fn forward_ctrl_c(shutdown: Shutdown) {
    loop {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        // Through the progress display, which would otherwise redraw over it.
        if shutdown.is_stopping() {
            engine::say_above_bar("second Ctrl-C: aborting in-flight requests");
        } else {
            engine::say_above_bar(
                "Ctrl-C: no new requests; waiting for in-flight ones (Ctrl-C again to abort)",
            );
        }
        shutdown.interrupt();
    }
}

/// The cost's estimated share, the projection made at start, and each provider's account.
fn print_money(r: &RunSummary) {
    let s = &r.summary;
    if s.estimated_cost_usd > 0.0 {
        eprintln!(
            "  cost: ${:.4}, of which ${:.4} estimated (answers without usage.cost, priced from the price table or the model's published price)",
            s.cost_usd, s.estimated_cost_usd
        );
    }
    if let Some(p) = &r.projection {
        eprintln!(
            "  projected at start: about ${:.4} expected ({}){}",
            p.expected_usd,
            p.basis,
            p.worst_case_usd
                .map_or(String::new(), |w| format!(", at most ${w:.4}"))
        );
    }
    for f in &s.by_provider {
        let failures: Vec<String> = f
            .failed_by_error_class
            .iter()
            .map(|(c, n)| format!("{}={n}", class_name(*c)))
            .collect();
        eprintln!(
            "  {}: {} attempt(s), {} succeeded, {} failed{}; ${:.4}{}",
            f.who(),
            f.attempts,
            f.succeeded_attempts,
            f.failed_attempts,
            if failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", failures.join(" "))
            },
            f.cost_usd,
            if f.estimated_cost_usd > 0.0 {
                format!(" (${:.4} estimated)", f.estimated_cost_usd)
            } else {
                String::new()
            }
        );
    }
    let unpriced: u64 = s.by_provider.iter().map(|f| f.unpriced_answers).sum();
    if unpriced > 0 && s.cost_usd > 0.0 {
        eprintln!(
            "  {unpriced} answer(s) reported no usage.cost and no price is known for them: not in the cost above (set [budget] prompt_usd_per_mtok / completion_usd_per_mtok)"
        );
    }
    if !s.by_provider.is_empty() && !s.by_provider_complete {
        eprintln!("  (per-provider figures cover only the sessions that kept them)");
    }
}

fn print_human(r: &RunSummary, config: &RunConfig) {
    let s = &r.summary;
    eprintln!(
        "generate: {} — {} prompt(s): {} succeeded, {} failed ({} retryable on resume{}), {} skipped, {} not started",
        match r.stop {
            StopReason::Completed => "completed".to_string(),
            _ => "stopped".to_string(),
        },
        r.prompts,
        s.succeeded,
        s.failed,
        s.retryable - s.retry_blocked.min(s.retryable),
        if s.retry_blocked > 0 {
            format!(
                "; {} more only once their pinned provider answers again",
                s.retry_blocked
            )
        } else {
            String::new()
        },
        s.skipped,
        r.not_started,
    );
    if !s.skipped_lines.is_empty() {
        eprintln!(
            "  {} line(s) of the prompts file skipped as not prompts (listed above and in summary.json; --strict stops on them)",
            s.skipped_lines.len()
        );
    }
    if !s.failed_by_error_class.is_empty() {
        let classes: Vec<String> = s
            .failed_by_error_class
            .iter()
            .map(|(c, n)| format!("{}={n}", class_name(*c)))
            .collect();
        eprintln!("  failed by class: {}", classes.join(" "));
    }
    let all = &s.all_sessions;
    eprintln!(
        "  run ({} session(s)): {} attempt(s), {} prompt / {} completion tokens, ${:.4}, {:.1}s, {:.1} req/s",
        all.sessions,
        s.attempts,
        s.prompt_tokens,
        s.completion_tokens,
        s.cost_usd,
        all.wall_time_s,
        all.requests_per_s
    );
    eprintln!(
        "  this session: {} attempt(s), {:.1}s, {:.1} req/s",
        s.session_requests, s.wall_time_s, s.requests_per_s
    );
    print_money(r);
    eprintln!(
        "  summary: {}",
        r.run_dir.join(crate::journal::SUMMARY_FILE).display()
    );
    if r.stop != StopReason::Completed {
        eprintln!("{}", stop_message(&r.stop, config));
    }
}
