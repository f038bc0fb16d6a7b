//! Scheduling a generation run: adaptive concurrency, retries, rate limits, budget, progress and
//! shutdown — the part of draftgen that runs for days against paid APIs.
//!
//! [`run`] is the whole of `draftgen generate` as a library call (the demo calls it in-process):
//! open or resume the run directory, check the OpenRouter credit, schedule every prompt that is not
//! finished, journal every ended attempt through one writer, and write `summary.json`.
//!
//! Resume rule: a prompt is finished when its latest record is a success, a skip, or a permanent
//! failure. Transient failures whose retries ran out are retried on the next run, and so are 401
//! and 402 failures — they are about the account, not the prompt — and, in a run that never had a
//! success, 403 and 404 failures (a wrong base URL or model; `health.rs` stops such a run early).
//! A failure's journaled `Retry-After` (`not_before_ms`) still holds for the prompt's next attempt.

mod budget;
mod concurrency;
mod credits;
mod endpoints;
mod health;
mod ledger;
mod pacing;
mod pricing;
mod progress;
mod prompts;
mod retry;
mod scheduler;
mod shutdown;
pub mod turns;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use budget::{
    cost_of, prompt_tokens_estimate, Budget, CostHistory, PriceTable, Projection, Reservation,
};
pub use concurrency::{Limiter, Permit};
pub use credits::{key_info, parse_key_info, CreditInfo};
pub use endpoints::EndpointPool;
pub use health::{Health, DEAD_AFTER};
pub use pacing::{Advertised, Pacer, Pacers};
pub use pricing::{closest_ids, lists_model, model_list, price_in_list, published_price};
pub use progress::say_above_bar;
pub use progress::{class_name, Progress, ProgressMode, Stats};
pub use prompts::PromptList;
pub use retry::{is_fatal, Next, RetryPolicy};
pub use shutdown::{Shutdown, StopReason};

use crate::api::{ApiKey, Client, ClientConfig, ErrorClass, ServerKind};
use crate::config::{ConfigError, RunConfig};
use crate::dataset::Prompt;
use crate::journal::{
    Disposition, Journal, JournalError, JournalWriter, Manifest, ResumeState, RunDir, Summary,
};

/// Records queued between request tasks and the journal writer thread.
const RECORD_QUEUE: usize = 4096;

/// Why a run could not start or could not finish its bookkeeping.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error(
        "OpenRouter endpoint {endpoint:?}: the key has ${remaining:.4} of credit left but this run is projected to cost about ${projected:.4} for {prompts} prompt(s); add credits, set --max-cost-usd at or below the credit (the run then stops when it is spent), or pass --force"
    )]
    InsufficientCredit {
        endpoint: String,
        remaining: f64,
        projected: f64,
        prompts: usize,
    },
    #[error("{0}")]
    KeyRejected(String),
    #[error(
        "endpoint {endpoint:?} does not list the model {model:?} in its model list: nothing was sent{}",
        if closest.is_empty() { String::new() } else { format!("; closest ids it lists: {}", closest.join(", ")) }
    )]
    UnknownModel {
        endpoint: String,
        model: String,
        closest: Vec<String>,
    },
    #[error("cannot start the async runtime: {0}")]
    Runtime(String),
}

impl EngineError {
    /// Whether the user's settings are at fault (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            EngineError::Config(_)
                | EngineError::Journal(JournalError::SettingsChanged { .. })
                | EngineError::UnknownModel { .. }
        )
    }
}

/// Presentation settings of a run (not part of the run's identity).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub progress: ProgressMode,
    /// Interval of plain progress lines.
    pub plain_every: Duration,
    /// Keep every streamed answer's raw chunks in the run's `streams.zst` (`--keep-stream`).
    pub keep_stream: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            progress: ProgressMode::Auto,
            plain_every: Duration::from_secs(10),
            keep_stream: false,
        }
    }
}

/// The account of one `generate` session.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub run_dir: PathBuf,
    /// Why the session ended.
    pub stop: StopReason,
    /// Distinct prompts in the input.
    pub prompts: u64,
    /// Of them, finished before this session started.
    pub finished_before: u64,
    /// Of them, with no record at all (never attempted: stopped before their turn).
    pub not_started: u64,
    /// Credit reported by OpenRouter endpoints at start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credits: Vec<CreditInfo>,
    /// Cost projected at start for the pending prompts (the expected figure of `projection`),
    /// when there was anything to project from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projected_cost_usd: Option<f64>,
    /// The projection at start: expected, worst case, and what the expected figure rests on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projection>,
    /// The adaptive in-flight limit at the end of the session, and how often it was cut because
    /// the server turned requests away.
    pub concurrency_limit: usize,
    pub concurrency_decreases: u64,
    /// The first error message of each class seen this session (verbatim, keys scrubbed).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub first_errors: BTreeMap<ErrorClass, String>,
    /// What `summary.json` says (the whole run, all sessions).
    pub summary: Summary,
}

impl RunSummary {
    /// Everything in the input succeeded (or was skipped) and nothing stopped the run. A prompts
    /// file line that is not a prompt is not ok: something the user gave was not run.
    pub fn all_ok(&self) -> bool {
        self.stop == StopReason::Completed
            && self.summary.failed == 0
            && self.not_started == 0
            && self.summary.skipped_lines.is_empty()
    }
}

/// `draftgen generate` as a library call, with default presentation (progress lines off unless a
/// terminal).
pub async fn run(
    config: &RunConfig,
    prompts: Vec<Prompt>,
    run_dir: &Path,
    shutdown: Shutdown,
) -> Result<RunSummary, EngineError> {
    run_with(
        config,
        prompts,
        run_dir,
        shutdown,
        RunOptions {
            progress: ProgressMode::None,
            ..RunOptions::default()
        },
    )
    .await
}

/// [`run`] with presentation options.
pub async fn run_with(
    config: &RunConfig,
    prompts: Vec<Prompt>,
    run_dir: &Path,
    shutdown: Shutdown,
    options: RunOptions,
) -> Result<RunSummary, EngineError> {
    let prompts = PromptList::try_from(prompts)
        .map_err(|e| EngineError::Runtime(format!("cannot serialize a prompt's messages: {e}")))?;
    run_list(config, prompts, run_dir, shutdown, options).await
}

/// [`run_with`] for prompts already compacted (the CLI reads them straight into a [`PromptList`]).
pub async fn run_list(
    config: &RunConfig,
    prompts: PromptList,
    run_dir: &Path,
    shutdown: Shutdown,
    options: RunOptions,
) -> Result<RunSummary, EngineError> {
    run_list_as(config, prompts, run_dir, shutdown, options, None).await
}

/// [`run_list`] under a given manifest instead of one made from these prompts (multi-turn rounds
/// run turn prompts under the manifest of the conversations, see [`turns`]).
pub(crate) async fn run_list_as(
    config: &RunConfig,
    mut prompts: PromptList,
    run_dir: &Path,
    shutdown: Shutdown,
    options: RunOptions,
    manifest: Option<Manifest>,
) -> Result<RunSummary, EngineError> {
    let started = Instant::now();
    config.validate()?;
    let skipped_lines = std::mem::take(&mut prompts.skipped);
    let prompts_file = prompts.file.take();
    let resolved = config.resolve_endpoints(|name| std::env::var(name).ok())?;
    let keys: Vec<ApiKey> = resolved
        .iter()
        .filter_map(|r| r.endpoint.api_key.clone())
        .collect();
    let say = |line: String| {
        if options.progress != ProgressMode::None {
            eprintln!("{}", scheduler::scrub(&keys, &line));
        }
    };

    let prompts = distinct_in_order(prompts.items);
    // Conversations run by turn: the input is not the prompts the journal holds.
    let input_prompts = manifest.is_none().then_some(prompts.len() as u64);
    let manifest = manifest.unwrap_or_else(|| {
        manifest_for(config, prompts.iter().map(|p| &*p.id)).with_prompts(prompts_file)
    });
    let client = run_client(config, &options)?;
    // Before the run directory is made: a wrong model id leaves nothing behind to resume.
    let prices = run_prices(config, &client, &resolved, &say).await?;
    let (journal, state) = open_run(config, run_dir, &manifest, &keys, &say)?;
    let sorted = sort_prompts(config, &state, prompts);
    say_lowered_limits(config, &sorted, &say);

    let streams = open_stream_log(run_dir, options.keep_stream)?;
    let costs = session_costs(
        config,
        &client,
        (&resolved, prices),
        (&sorted, &state),
        run_dir,
        &say,
    )
    .await?;
    let session = Session {
        client,
        resolved,
        keys: keys.clone(),
        streams,
        budget: costs.budget,
        prices: costs.prices,
        shutdown: shutdown.clone(),
    };
    let ended = session
        .schedule(
            config,
            &options,
            (journal, state),
            sorted.pending,
            sorted.finished_before,
            sorted.ids.len() as u64,
        )
        .await?;
    let summary = write_summary(run_dir, (&ended, input_prompts), started, skipped_lines)?;
    Ok(run_summary(
        run_dir,
        &shutdown,
        (&sorted.ids, sorted.finished_before),
        (costs.credits, costs.projection),
        &ended,
        summary,
    ))
}

/// The account of a session that ended as `ended`, its run summed up in `summary`.
fn run_summary(
    run_dir: &Path,
    shutdown: &Shutdown,
    (ids, finished_before): (&[Box<str>], u64),
    (credits, projection): (Vec<CreditInfo>, Option<Projection>),
    ended: &Scheduled,
    summary: Summary,
) -> RunSummary {
    let stop = shutdown
        .reason()
        .map_or(StopReason::Completed, |(reason, _)| reason);
    RunSummary {
        run_dir: run_dir.to_path_buf(),
        stop,
        prompts: ids.len() as u64,
        finished_before,
        not_started: not_started(ids, &ended.state),
        credits,
        projected_cost_usd: projection.as_ref().map(|p| p.expected_usd),
        projection,
        concurrency_limit: ended.limit,
        concurrency_decreases: ended.decreases,
        first_errors: ended.health.first_errors(),
        summary,
    }
}

/// Say how many prompts asked for more than the run's `max_tokens` (they are sent with the run's).
fn say_lowered_limits(config: &RunConfig, sorted: &SortedPrompts, say: &impl Fn(String)) {
    if sorted.lowered_limits > 0 {
        say(format!(
            "{} prompt(s) ask for more than the run's max_tokens ({}): sent with the run's (the budget bounds each request by it)",
            sorted.lowered_limits,
            config.request.max_tokens.unwrap_or_default()
        ));
    }
}

/// The HTTP client every request of the session goes through.
fn run_client(config: &RunConfig, options: &RunOptions) -> Result<Client, EngineError> {
    Client::new(ClientConfig {
        connect_timeout: Duration::from_secs_f64(config.timeouts.connect_s),
        keep_stream_chunks: options.keep_stream,
        max_answer_bytes: config.max_answer_bytes(),
        ..ClientConfig::default()
    })
    .map_err(|e| EngineError::Client(e.to_string()))
}

/// Prompts of this input with no record at all (the summary counts prompts with a record).
fn not_started(ids: &[Box<str>], state: &ResumeState) -> u64 {
    ids.iter().filter(|id| state.get(id).is_none()).count() as u64
}

/// What a session may spend and what it is expected to: the price table, the budget, the
/// projected cost of the pending prompts, and the credit of each OpenRouter endpoint.
struct SessionCosts {
    prices: Option<PriceTable>,
    budget: Budget,
    projection: Option<Projection>,
    credits: Vec<CreditInfo>,
}

/// The costs of the session about to run `sorted`'s pending prompts (said, with the run's
/// counts); an error when an endpoint's credit cannot pay for them or its key is refused.
async fn session_costs(
    config: &RunConfig,
    client: &Client,
    (resolved, prices): (&[crate::config::ResolvedEndpoint], Option<PriceTable>),
    (sorted, state): (&SortedPrompts, &ResumeState),
    run_dir: &Path,
    say: &impl Fn(String),
) -> Result<SessionCosts, EngineError> {
    let has_pending = !sorted.pending.is_empty();
    let budget = session_budget(config, prices, state);
    let projection = budget.projection(sorted.pending.iter().map(|p| p.prompt.prompt_tokens()));
    say(format!(
        "generate: {} prompt(s), {} finished before, {} to run; run dir {}",
        sorted.ids.len(),
        sorted.finished_before,
        sorted.pending.len(),
        run_dir.display()
    ));
    if let (Some(p), true) = (&projection, has_pending) {
        say(format!(
            "projected cost of this session: about ${:.4} expected ({}){}",
            p.expected_usd,
            p.basis,
            p.worst_case_usd.map_or(String::new(), |w| format!(
                "; at most ${w:.4} if every answer reaches the completion limit"
            ))
        ));
    }
    let pending = sorted.pending.len();
    let credits =
        check_credits(client, resolved, config, projection.as_ref(), pending, say).await?;
    Ok(SessionCosts {
        prices,
        budget,
        projection,
        credits,
    })
}

/// Create or open the run directory under `manifest`, its journal redacting the run's keys.
fn open_run(
    config: &RunConfig,
    run_dir: &Path,
    manifest: &Manifest,
    keys: &[ApiKey],
    say: &impl Fn(String),
) -> Result<(Journal, ResumeState), EngineError> {
    let force = config.force || adopts_imported_manifest(run_dir);
    let (mut journal, state) = RunDir::create_or_open(run_dir, manifest, force)?;
    for key in keys {
        journal.set_redact(key.expose());
    }
    if let Some(torn) = &state.report.torn_tail {
        say(format!(
            "{}: cut a torn last line ({} bytes) left by an interrupted run",
            torn.segment.display(),
            torn.removed_bytes
        ));
    }
    Ok((journal, state))
}

/// `summary.json` of the whole run after the session that `ended` (earlier sessions' figures
/// kept); `input_prompts`: distinct prompts of the input, when they are those the journal holds.
fn write_summary(
    run_dir: &Path,
    (end, input_prompts): (&Scheduled, Option<u64>),
    started: Instant,
    skipped_lines: Vec<crate::journal::SkippedLine>,
) -> Result<Summary, EngineError> {
    let mut summary = Summary::from_state(&end.state, started.elapsed());
    summary.by_provider = end.ledger.figures();
    summary.estimated_cost_usd = summary
        .by_provider
        .iter()
        .map(|f| f.estimated_cost_usd)
        .sum();
    let previous = RunDir::new(run_dir).read_summary();
    summary.input_prompts =
        input_prompts.or_else(|| previous.as_ref().and_then(|p| p.input_prompts));
    let mut summary = summary.after(previous);
    let blocked = ledger::blocked_providers(&summary.by_provider, &end.pinned);
    summary.retry_blocked = end.ledger.retry_blocked(&end.state, &blocked);
    summary.skipped_lines = skipped_lines;
    RunDir::new(run_dir).write_summary(&summary)?;
    Ok(summary)
}

/// The prompts with each id once (its first occurrence), in input order.
fn distinct_in_order(mut prompts: Vec<prompts::CompactPrompt>) -> Vec<prompts::CompactPrompt> {
    let mut seen = HashSet::with_capacity(prompts.len());
    let keep: Vec<bool> = prompts.iter().map(|p| seen.insert(&*p.id)).collect();
    drop(seen);
    let mut keep = keep.into_iter();
    prompts.retain(|_| keep.next().unwrap_or(false));
    prompts
}

/// The input's prompts sorted into those to run this session and those finished before.
struct SortedPrompts {
    /// Every prompt's id, in input order.
    ids: Vec<Box<str>>,
    pending: Vec<scheduler::Pending>,
    finished_before: u64,
    /// Prompts whose own `max_tokens` was lowered to the run's.
    lowered_limits: usize,
}

/// Move each prompt either into the pending list or out (finished): no copy of the dataset.
fn sort_prompts(
    config: &RunConfig,
    state: &ResumeState,
    prompts: Vec<prompts::CompactPrompt>,
) -> SortedPrompts {
    let mut sorted = SortedPrompts {
        ids: Vec::with_capacity(prompts.len()),
        pending: Vec::new(),
        finished_before: 0,
        lowered_limits: 0,
    };
    // A run that never had a success and failed with 403/404 was pointed at the wrong place
    // (the early stop ends such a run): those failures say nothing about the prompts.
    let never_succeeded = state.totals.success == 0;
    for mut prompt in prompts {
        sorted.ids.push(prompt.id.clone());
        if let Some(run_limit) = config.request.max_tokens {
            sorted.lowered_limits += usize::from(lower_own_max_tokens(&mut prompt, run_limit));
        }
        let disposition = state.get(&prompt.id).map(|s| s.disposition());
        if runs_again(disposition, never_succeeded) {
            let first_attempt = state.next_attempt(&prompt.id);
            let not_before_ms = state.get(&prompt.id).and_then(|s| s.not_before_ms);
            sorted.pending.push(scheduler::Pending {
                prompt,
                first_attempt,
                not_before_ms,
            });
        } else {
            sorted.finished_before += 1;
        }
    }
    sorted
}

/// Whether a prompt whose journal says `disposition` (`None`: no record) runs this session.
fn runs_again(disposition: Option<Disposition>, never_succeeded: bool) -> bool {
    match disposition {
        None | Some(Disposition::Retry(_)) => true,
        // 401/402 are about the account: retried once the key or credit is fixed.
        Some(Disposition::FailedPermanently(Some(class))) => {
            is_fatal(class)
                || (never_succeeded
                    && matches!(class, ErrorClass::Forbidden | ErrorClass::ClientError))
        }
        Some(_) => false,
    }
}

/// The stream log of the run (`--keep-stream`), opened for appending.
fn open_stream_log(
    run_dir: &Path,
    keep_stream: bool,
) -> Result<Option<crate::journal::streams::StreamLog>, EngineError> {
    if !keep_stream {
        return Ok(None);
    }
    let log = crate::journal::streams::StreamLog::open(run_dir).map_err(|e| {
        EngineError::Runtime(format!(
            "cannot open {}: {e}",
            run_dir
                .join(crate::journal::streams::STREAMS_FILE)
                .display()
        ))
    })?;
    Ok(Some(log))
}

/// Per endpoint, the providers its OpenRouter routing restricts it to: `provider.only`, or
/// `provider.order` with `allow_fallbacks = false`.
fn pinned_providers(resolved: &[crate::config::ResolvedEndpoint]) -> BTreeMap<String, Vec<String>> {
    let names = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut pinned = BTreeMap::new();
    for r in resolved {
        let Some(routing) = &r.options.provider else {
            continue;
        };
        let mut only = names(routing.get("only"));
        if only.is_empty() && routing.get("allow_fallbacks") == Some(&serde_json::json!(false)) {
            only = names(routing.get("order"));
        }
        if !only.is_empty() {
            pinned.insert(r.endpoint.name.clone(), only);
        }
    }
    pinned
}

/// The model list of every OpenRouter endpoint, fetched before anything is sent: a model it does
/// not list stops the run (with the closest ids it lists); a list that cannot be fetched only
/// says so. Returns the price table of the run: the configured one, else the model's published
/// price, which prices answers without `usage.cost` (marked estimated) and bounds requests.
async fn run_prices(
    config: &RunConfig,
    client: &Client,
    resolved: &[crate::config::ResolvedEndpoint],
    say: &impl Fn(String),
) -> Result<Option<PriceTable>, EngineError> {
    let mut prices = PriceTable::from_config(&config.budget);
    for r in resolved.iter().filter(|r| r.kind == ServerKind::OpenRouter) {
        let model = &r.options.model;
        let Some(list) = model_list(client, &r.endpoint).await else {
            say(format!(
                "endpoint {:?}: could not fetch its model list; the model id {model:?} is not checked",
                r.endpoint.name
            ));
            continue;
        };
        if lists_model(&list, model) == Some(false) {
            return Err(EngineError::UnknownModel {
                endpoint: r.endpoint.name.clone(),
                model: model.clone(),
                closest: closest_ids(&list, model),
            });
        }
        if prices.is_some() {
            continue;
        }
        if let Some(found) = price_in_list(&list, model) {
            say(format!(
                "endpoint {:?}: {model} is priced ${:.4} / ${:.4} per million prompt / completion tokens (its published price: answers without usage.cost are priced by it, marked estimated; the budget bounds each request by it)",
                r.endpoint.name,
                found.prompt * 1e6,
                found.completion * 1e6
            ));
            prices = Some(found);
        }
    }
    Ok(prices)
}

/// The budget of this session: the cap over the whole run, with what earlier sessions spent.
fn session_budget(config: &RunConfig, prices: Option<PriceTable>, state: &ResumeState) -> Budget {
    Budget::new(
        config.budget.max_cost_usd,
        prices,
        config.request.max_tokens,
        state.totals.cost_usd,
    )
    .with_history(CostHistory {
        sum: state.totals.cost_usd,
        n: state.totals.costed_records,
        max: state.totals.max_record_cost_usd,
    })
    .with_completions(state.totals.completion_tokens, state.totals.success)
}

/// What a session schedules its prompts with, once the run is open and checked.
struct Session {
    client: Client,
    resolved: Vec<crate::config::ResolvedEndpoint>,
    keys: Vec<ApiKey>,
    streams: Option<crate::journal::streams::StreamLog>,
    budget: Budget,
    prices: Option<PriceTable>,
    shutdown: Shutdown,
}

/// How a session's scheduling ended.
struct Scheduled {
    /// The resume state with every record of the session.
    state: ResumeState,
    /// The adaptive in-flight limit at the end, and how often it was cut.
    limit: usize,
    decreases: u64,
    health: Arc<Health>,
    /// Attempts and cost per endpoint and provider this session.
    ledger: ledger::Ledger,
    /// Per endpoint, the providers its routing pins it to ([`pinned_providers`]).
    pinned: BTreeMap<String, Vec<String>>,
}

impl Session {
    /// Run `pending` to the end (or a stop): the writer thread journals every ended attempt and
    /// keeps the resume state current, the reporter shows progress.
    async fn schedule(
        self,
        config: &RunConfig,
        options: &RunOptions,
        (journal, state): (Journal, ResumeState),
        pending: Vec<scheduler::Pending>,
        finished_before: u64,
        total: u64,
    ) -> Result<Scheduled, EngineError> {
        let limiter = Limiter::new(
            config.concurrency.initial,
            config.concurrency.min,
            config.concurrency.max,
        );
        let budget = Arc::new(Mutex::new(self.budget));
        let progress = Arc::new(Progress::new(
            total,
            finished_before,
            limiter.clone(),
            budget.clone(),
        ));
        // The writer thread also keeps the resume state current, so this runtime's one thread
        // runs no bookkeeping task (which would wait its turn behind thousands of request tasks).
        let writer = JournalWriter::spawn_tracking(journal, state, RECORD_QUEUE)?;
        let reporter = tokio::spawn(
            progress
                .clone()
                .report(options.progress, options.plain_every),
        );
        let health = Arc::new(Health::new(self.resolved.len()));
        let pinned = pinned_providers(&self.resolved);
        let pacers = Pacers::new(self.resolved.len());
        let ctx = Arc::new(scheduler::Ctx {
            client: self.client,
            endpoints: EndpointPool::new(self.resolved),
            timeouts: config.timeouts.to_timeouts(),
            retry: RetryPolicy::from(&config.retry),
            limiter,
            pacers,
            rate: scheduler::rate_limiter(config.concurrency.requests_per_minute),
            budget: budget.clone(),
            budget_settled: tokio::sync::Notify::new(),
            prices: self.prices,
            progress: progress.clone(),
            health: health.clone(),
            shutdown: self.shutdown,
            records: writer.sender(),
            keys: self.keys,
            streams: self.streams,
            ledger: Mutex::new(ledger::Ledger::default()),
        });
        scheduler::schedule(ctx.clone(), pending, config.grace()).await;
        let (limit, decreases) = (ctx.limiter.limit(), ctx.limiter.decreases());
        let ledger = ctx
            .ledger
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        drop(ctx);

        reporter.abort();
        let _ = reporter.await;
        // Every task has ended and dropped its sender: the writer drains, syncs and returns the
        // state.
        let (_, state) = writer.close_tracking().await?;
        let state = state.ok_or_else(|| {
            EngineError::Runtime("the journal writer gave back no resume state".to_string())
        })?;
        Ok(Scheduled {
            state,
            limit,
            decreases,
            health,
            ledger,
            pinned,
        })
    }
}

/// The OpenRouter credit check (see [`credits`] for the policy).
async fn check_credits(
    client: &Client,
    endpoints: &[crate::config::ResolvedEndpoint],
    config: &RunConfig,
    projection: Option<&Projection>,
    pending: usize,
    say: &impl Fn(String),
) -> Result<Vec<CreditInfo>, EngineError> {
    let projected = projection.map(|p| p.expected_usd);
    let worst = projection.and_then(|p| p.worst_case_usd);
    let mut infos = Vec::new();
    if pending == 0 {
        return Ok(infos);
    }
    for r in endpoints
        .iter()
        .filter(|r| r.kind == ServerKind::OpenRouter)
    {
        match key_info(client, &r.endpoint).await {
            Ok(info) => {
                let remaining = info.limit_remaining;
                say(format!(
                    "endpoint {:?}: credit left {}; projected cost of this session {}",
                    r.endpoint.name,
                    remaining.map_or("unlimited".to_string(), |c| format!("${c:.4}")),
                    projected.map_or(
                        "unknown until the first answers report their cost".to_string(),
                        |p| format!("about ${p:.4}")
                    ),
                ));
                if let (Some(remaining), Some(projected)) = (remaining, projected) {
                    let capped = config
                        .budget
                        .max_cost_usd
                        .is_some_and(|max| max <= remaining);
                    if worst.is_some_and(|w| w > remaining) && projected <= remaining && !capped {
                        say(format!(
                            "endpoint {:?}: warning: the worst case (every answer at the completion limit) would exceed the credit left; --max-cost-usd at or below it stops the run before it runs out",
                            r.endpoint.name
                        ));
                    }
                    if projected > remaining && !capped && !config.force {
                        return Err(EngineError::InsufficientCredit {
                            endpoint: r.endpoint.name.clone(),
                            remaining,
                            projected,
                            prompts: pending,
                        });
                    }
                }
                infos.push(info);
            }
            Err(err) if is_fatal(err.class) => {
                let reason = StopReason::Fatal {
                    class: err.class,
                    endpoint: r.endpoint.name.clone(),
                    message: err.message.clone(),
                };
                return Err(EngineError::KeyRejected(reason.explain()));
            }
            Err(err) => say(format!(
                "endpoint {:?}: could not check the key's credit ({}); continuing",
                r.endpoint.name, err
            )),
        }
    }
    Ok(infos)
}

pub use crate::journal::record::IMPORTED_RUN_ENDPOINT;

/// A run created by `draftgen import` holds finished work under a placeholder manifest: the first
/// `generate` in it records its own settings (the placeholder's fingerprint is kept in
/// `previous_fingerprints`) instead of refusing them.
fn adopts_imported_manifest(run_dir: &Path) -> bool {
    matches!(
        RunDir::new(run_dir).read_manifest(),
        Ok(Some(m)) if m.endpoints == [IMPORTED_RUN_ENDPOINT]
    )
}

/// The manifest of a run: the settings that shape requests, and the dataset's identity (a hash of
/// the sorted prompt ids, which are content hashes — so re-preparing the same data agrees).
fn manifest_for<'a>(config: &RunConfig, ids: impl Iterator<Item = &'a str>) -> Manifest {
    let mut ids: Vec<&str> = ids.collect();
    ids.sort_unstable();
    let mut hasher = Sha256::new();
    for id in ids {
        hasher.update(id.as_bytes());
        hasher.update(b"\n");
    }
    let r = &config.request;
    let sampling = serde_json::json!({
        "max_tokens": r.max_tokens,
        "temperature": r.temperature,
        "top_p": r.top_p,
        "seed": r.seed,
    });
    let mut request_options = serde_json::to_value(r).unwrap_or_default();
    // `[request]`'s server kind is a placeholder (each endpoint's kind is its own): the manifest
    // records the real one per endpoint in `servers`.
    if let Some(options) = request_options.as_object_mut() {
        options.remove("server_kind");
    }
    Manifest::new(
        r.model.clone(),
        config.endpoint_labels(),
        sampling,
        request_options,
        hex::encode(hasher.finalize()),
    )
    .with_servers(config.server_records())
}

/// Lowers a prompt's own `max_tokens` (`PromptOptions::max_tokens`) to the run's when it asks for
/// more; whether it did.
fn lower_own_max_tokens(prompt: &mut prompts::CompactPrompt, run_limit: u32) -> bool {
    let Some(own) = prompt
        .options
        .as_deref_mut()
        .and_then(|o| o.get_mut("max_tokens"))
    else {
        return false;
    };
    if own.as_u64().is_some_and(|n| n > u64::from(run_limit)) {
        *own = run_limit.into();
        return true;
    }
    false
}
