//! The scheduler: turns pending prompts into attempts under the in-flight limit, the request rate
//! limit and the budget, and every ended attempt into one journal [`Record`].
//!
//! Shape of a session:
//! - the **feeder** (the loop in [`schedule`]) walks the pending prompts; for each it waits for a
//!   slot from the [`Limiter`], reserves the estimated cost in the [`Budget`], and spawns one
//!   **prompt task**. Waiting for a slot *before* spawning keeps memory bounded by the limit, not by
//!   the dataset.
//! - a prompt task runs attempts until a success, a permanent failure, or this session's attempts
//!   are used up. Between attempts it gives its slot back while it sleeps (a backing-off request
//!   must not hold concurrency), and it never retries sooner than `Retry-After`.
//! - every ended attempt is serialized by its task and goes over a bounded channel to the
//!   journal's writer thread, which appends it and keeps the [`ResumeState`] current. The task
//!   keeps its slot until the record is queued, so a journal that falls behind slows the
//!   requests down rather than letting finished records pile up.
//!
//! [`ResumeState`]: crate::journal::ResumeState
//!
//! A stop ([`Shutdown`]) ends the feeder and every backoff at once; in-flight requests get the
//! grace period, then are aborted. An aborted request leaves no record, so its prompt is simply
//! pending again on resume.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::value::RawValue;
use tokio::task::JoinSet;

use super::budget::{cost_of_usage, Budget, PriceTable, Reservation};
use super::concurrency::{Limiter, Permit, Sending};
use super::endpoints::EndpointPool;
use super::health::Health;
use super::ledger::{Booked, Ledger};
use super::pacing::{Pacer, Pacers, Turn};
use super::progress::Progress;
use super::prompts::CompactPrompt;
use super::retry::{Next, RetryPolicy};
use super::shutdown::{Shutdown, StopReason};
use crate::api::usage_check::{self, UsageDoubt};
use crate::api::{
    Advertised, ApiError, ApiKey, BodyFields, Client, ErrorClass, RawChatOutcome, ResponseFacts,
    Timeouts, UsageNumbers,
};
use crate::journal::{EncodedRecord, RecordRef, RecordSender, Status};

/// Everything a prompt task needs, shared.
pub(crate) struct Ctx {
    pub client: Client,
    pub endpoints: EndpointPool,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    pub limiter: Arc<Limiter>,
    /// Each endpoint's start pacing, learned from its 429s.
    pub pacers: Pacers,
    pub rate: Option<DefaultDirectRateLimiter>,
    pub budget: Arc<Mutex<Budget>>,
    /// Woken whenever an attempt settles its reservation (a request waiting for budget asks again).
    pub budget_settled: tokio::sync::Notify,
    pub prices: Option<PriceTable>,
    pub progress: Arc<Progress>,
    /// Whether the endpoints work at all (the early stop), and the first error of each class.
    pub health: Arc<Health>,
    pub shutdown: Shutdown,
    pub records: RecordSender,
    /// Every key of the run, to scrub from anything shown to the user.
    pub keys: Vec<ApiKey>,
    /// `--keep-stream`: where streamed answers' raw chunks go.
    pub streams: Option<crate::journal::streams::StreamLog>,
    /// Attempts and cost per endpoint and provider this session.
    pub ledger: Mutex<Ledger>,
}

/// A prompt to run and the `attempt` number its first try this session carries.
pub(crate) struct Pending {
    pub prompt: CompactPrompt,
    pub first_attempt: u32,
    /// An earlier session's `Retry-After` for this prompt (Unix ms): not sent before it.
    pub not_before_ms: Option<u64>,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long until `not_before_ms` (zero if past), spread by up to half the wait again so prompts
/// told to come back at the same moment do not all come back at that moment.
fn wait_for(not_before_ms: u64) -> Duration {
    let left = Duration::from_millis(not_before_ms.saturating_sub(unix_ms(SystemTime::now())));
    if left.is_zero() {
        return left;
    }
    left + left.mul_f64(rand::random::<f64>() * 0.5)
}

/// A requests-per-minute limiter, if configured.
pub(crate) fn rate_limiter(rpm: Option<u32>) -> Option<DefaultDirectRateLimiter> {
    let rpm = std::num::NonZeroU32::new(rpm?)?;
    // Burst of one second's worth, so a low limit does not start with a minute's worth at once.
    let burst = std::num::NonZeroU32::new(rpm.get().div_ceil(60)).unwrap_or(rpm);
    Some(RateLimiter::direct(
        Quota::per_minute(rpm).allow_burst(burst),
    ))
}

/// Run every pending prompt (until stopped). Returns when all prompt tasks have ended, or the grace
/// period after a stop has passed, or an abort was asked for.
pub(crate) async fn schedule(ctx: Arc<Ctx>, pending: Vec<Pending>, grace: std::time::Duration) {
    let mut tasks = JoinSet::new();
    let mut waiting = pending.len();
    for item in pending {
        if ctx.shutdown.is_stopping() {
            break;
        }
        let permit = tokio::select! {
            permit = ctx.limiter.acquire() => permit,
            _ = ctx.shutdown.stopping() => break,
        };
        let estimate = match reserve(&ctx, &item.prompt).await {
            Some(estimate) => estimate,
            None => break,
        };
        tasks.spawn(run_prompt(ctx.clone(), item, permit, estimate));
        waiting -= 1;
        ctx.limiter.waiting(waiting);
        ctx.pacers.waiting(waiting);
        // Reap finished tasks so the set stays as small as the in-flight limit.
        while tasks.try_join_next().is_some() {}
    }
    ctx.limiter.drained();

    loop {
        let deadline = ctx
            .shutdown
            .reason()
            .map(|(_, at)| tokio::time::Instant::from_std(at + grace));
        tokio::select! {
            next = tasks.join_next() => if next.is_none() { break },
            _ = ctx.shutdown.aborting() => {
                tasks.abort_all();
                break;
            }
            _ = ctx.shutdown.stopping(), if deadline.is_none() => {}
            _ = sleep_until_opt(deadline), if deadline.is_some() => {
                tracing::warn!(
                    "grace period over: aborting {} request(s) still in flight (their prompts stay pending for resume)",
                    ctx.limiter.in_flight()
                );
                tasks.abort_all();
                break;
            }
        }
    }
    // Aborted tasks are cancelled at their next await point; wait so their permits and senders drop.
    while tasks.join_next().await.is_some() {}
}

async fn sleep_until_opt(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Reserve budget for one request, waiting while requests in flight hold what is left; on a full
/// budget stop the run and return `None` (also `None` once the run is stopping).
async fn reserve(ctx: &Ctx, prompt: &CompactPrompt) -> Option<f64> {
    loop {
        // Registered before asking, so a settle between the answer and the wait is not missed.
        let settled = ctx.budget_settled.notified();
        tokio::pin!(settled);
        settled.as_mut().enable();
        let answer = match ctx.budget.lock() {
            Ok(mut budget) => match budget.reserve(prompt.prompt_tokens()) {
                Reservation::Full => Err(StopReason::Budget {
                    max_cost_usd: budget.max().unwrap_or(0.0),
                    spent_usd: budget.spent(),
                }),
                other => Ok(other),
            },
            Err(_) => Ok(Reservation::Granted(0.0)),
        };
        match answer {
            Ok(Reservation::Granted(amount)) => return Some(amount),
            Ok(_) => {
                tokio::select! {
                    _ = &mut settled => {}
                    _ = ctx.shutdown.stopping() => return None,
                }
            }
            Err(reason) => {
                ctx.shutdown.stop(reason);
                return None;
            }
        }
    }
}

/// One prompt's attempts in this session.
async fn run_prompt(ctx: Arc<Ctx>, pending: Pending, permit: Permit, estimate: f64) {
    let first_attempt = pending.first_attempt;
    let prompt = pending.prompt;
    let mut permit = Some(permit);
    let mut estimate = estimate;
    // A `Retry-After` journaled by an earlier session still holds: wait it out without holding
    // a slot or budget, then come back like a retry.
    let held_back = pending.not_before_ms.map_or(Duration::ZERO, wait_for);
    if !held_back.is_zero() {
        permit = None;
        settle(&ctx, estimate, None, false);
        if !Box::pin(back_off(&ctx, held_back)).await {
            return;
        }
    }
    for n in 1..=ctx.retry.max_attempts {
        // The waits below are boxed: they are rare next to the request itself, and a task's
        // future is held for every request in flight (10,000 of them at a time).
        if n > 1 || permit.is_none() {
            // Re-enter under the limit and the budget like a new request.
            let Some(acquired) = Box::pin(acquire_or_stop(&ctx)).await else {
                return;
            };
            permit = Some(acquired);
            match Box::pin(reserve(&ctx, &prompt)).await {
                Some(e) => estimate = e,
                None => return,
            }
        }
        let Some((next, endpoint)) =
            attempt(&ctx, &prompt, first_attempt + n - 1, n, estimate).await
        else {
            return;
        };
        let hold = overload_hold(&ctx, &next);
        if !hold.is_zero() && !Box::pin(back_off(&ctx, hold)).await {
            return;
        }
        // The slot is held until the record is queued: a journal that falls behind (a slow disk)
        // slows the requests down instead of letting finished records pile up in memory.
        permit.take();
        let Some(delay) = retry_delay(&ctx, next, endpoint, hold) else {
            return;
        };
        if !Box::pin(back_off(&ctx, delay)).await {
            return;
        }
    }
}

/// Attempt `attempt` of `prompt` (the `n`th of this session), under the request-rate limit, on
/// an endpoint of the pool: sent, journaled and accounted for. Returns what comes next (for a
/// failure) and the endpoint's name; `None` when the prompt task must end (the run stops, or its
/// request or record could not be serialized).
async fn attempt<'a>(
    ctx: &'a Ctx,
    prompt: &CompactPrompt,
    attempt: u32,
    n: u32,
    estimate: f64,
) -> Option<(Option<(ApiError, Next)>, &'a str)> {
    if let Some(rate) = &ctx.rate {
        if !Box::pin(rate_ready(ctx, rate)).await {
            settle(ctx, estimate, None, false);
            return None;
        }
    }
    let Some((endpoint_index, chosen, body_fields)) =
        ctx.endpoints.choose_indexed(&mut rand::rng())
    else {
        settle(ctx, estimate, None, false);
        return None;
    };
    let endpoint = &chosen.endpoint;
    let pacer = ctx.pacers.get(endpoint_index);
    let Some(turn) = Box::pin(turn_of(ctx, pacer)).await else {
        settle(ctx, estimate, None, false);
        return None;
    };
    // Serialized once: these bytes are the HTTP body and, verbatim, the journal's `request`.
    let request = request_body(ctx, prompt, body_fields, &endpoint.name, estimate)?;
    let started_at = chrono::Utc::now();
    let t0 = Instant::now();
    let sending = ctx.limiter.sending();
    let (result, advertised) = ctx
        .client
        .chat_raw_limits(endpoint, &request, &ctx.timeouts)
        .await;
    let (at_limit, paced) = held_by(ctx, &sending, result.is_ok(), turn.waited);
    let sending_count = sending.count;
    drop(sending);
    let age = t0.elapsed();
    let latency_ms = t0.elapsed().as_millis() as u64;
    let head = Head {
        id: &prompt.id,
        attempt,
        endpoint: &endpoint.name,
        request: &request,
        started_at: started_at.to_rfc3339(),
        source: &prompt.source,
    };
    let (encoded, next, served) = attempt_record(ctx, &head, result, n, latency_ms);
    drop(request);
    let record = record_or_stop(ctx, encoded, &endpoint.name, estimate)?;
    book(ctx, &prompt.id, &endpoint.name, &served, &record);
    let signal = Signal::of(&next, at_limit, paced);
    account(
        ctx,
        endpoint_index,
        &endpoint.name,
        &record,
        &next,
        estimate,
        latency_ms,
        signal.slot.then_some(sending_count),
        turn.waited,
    );
    if let Some(pacer) = pacer {
        let answered = next.is_none();
        pace_ended(
            pacer,
            turn,
            signal,
            advertised.map(|limits| (limits, age)),
            answered,
            served.provider.as_deref(),
        );
    }
    if ctx.records.send_encoded(record).await.is_err() {
        // The writer is gone only if the journal failed; the engine reports that error.
        ctx.shutdown.stop(StopReason::Interrupted);
        return None;
    }
    Some((next, &endpoint.name))
}

/// The attempt's cost and failure go to the ledger (per endpoint and provider).
fn book(ctx: &Ctx, id: &str, endpoint: &str, served: &Served, record: &EncodedRecord) {
    if let Ok(mut ledger) = ctx.ledger.lock() {
        ledger.book(&Booked {
            id,
            endpoint,
            provider: served.provider.as_deref(),
            error_class: record.meta.error_class,
            cost_usd: record.meta.cost_usd,
            estimated: served.estimated,
        });
    }
}

/// The request body of one attempt; on a failure to serialize, the run stops (and `None`).
fn request_body(
    ctx: &Ctx,
    prompt: &CompactPrompt,
    body_fields: &BodyFields,
    endpoint: &str,
    estimate: f64,
) -> Option<Box<RawValue>> {
    match body_fields.serialize_with(
        prompt.messages_for(body_fields.tools_as_parameter()),
        prompt.tools.as_deref(),
        prompt.options.as_deref(),
    ) {
        Ok(request) => Some(request),
        Err(e) => {
            // Raw JSON and `Value`s always serialize; if that ever changed, stop rather than
            // send garbage.
            let message = format!("cannot serialize the request body: {e}");
            stop_unserializable(ctx, endpoint, message, estimate);
            None
        }
    }
}

/// Who answered an attempt and whether its cost was priced by draftgen.
#[derive(Default)]
struct Served {
    provider: Option<String>,
    estimated: bool,
}

impl Served {
    fn of(facts: &ResponseFacts, ctx: &Ctx) -> Served {
        let (cost, estimated) = cost_and_estimated(&facts.usage, ctx);
        Served {
            provider: facts.provider.clone(),
            estimated: estimated && cost.is_some(),
        }
    }
}

/// The cost of an attempt's usage, and whether it was priced here (no `usage.cost`).
fn cost_and_estimated(usage: &UsageNumbers, ctx: &Ctx) -> (Option<f64>, bool) {
    (
        cost_of_usage(usage, ctx.prices.as_ref()),
        usage.cost.is_none(),
    )
}

/// The journal record of one attempt's result, (for a failure) what the retry policy says
/// comes next, and who served it. A streamed answer's chunks go to the stream log first
/// (`--keep-stream`).
fn attempt_record(
    ctx: &Ctx,
    head: &Head<'_>,
    result: Result<RawChatOutcome, ApiError>,
    n: u32,
    latency_ms: u64,
) -> (
    Result<EncodedRecord, serde_json::Error>,
    Option<(ApiError, Next)>,
    Served,
) {
    match result {
        Ok(mut outcome) => {
            if let (Some(log), Some(chunks)) = (&ctx.streams, outcome.chunks.take()) {
                // Auditing data only: a failed write is said, never fatal to the run.
                if let Err(e) = log.append(head.id, head.attempt, &chunks) {
                    tracing::warn!("--keep-stream: cannot append to streams.zst: {e}");
                }
            }
            let served = Served::of(&outcome.facts, ctx);
            (success_record(ctx, head, outcome), None, served)
        }
        Err(err) => {
            let next = ctx.retry.next(err.class, n, err.retry_after);
            let served = err
                .body
                .as_ref()
                .map(|body| Served::of(&ResponseFacts::of_value(body), ctx))
                .unwrap_or_default();
            let record = failure_record(ctx, head, &err, latency_ms);
            (record, Some((err, next)), served)
        }
    }
}

/// The encoded record, or (it could not be encoded) the run stopped and `None`.
fn record_or_stop(
    ctx: &Ctx,
    encoded: Result<EncodedRecord, serde_json::Error>,
    endpoint: &str,
    estimate: f64,
) -> Option<EncodedRecord> {
    match encoded {
        Ok(record) => Some(record),
        Err(e) => {
            // Cannot happen for JSON that was just parsed; a record that cannot be written
            // must not be silently lost, so the run stops (the prompt stays pending).
            let message = format!("cannot serialize the journal record: {e}");
            stop_unserializable(ctx, endpoint, message, estimate);
            None
        }
    }
}

/// Something of an attempt could not be serialized: the run stops (a fatal `malformed`) and the
/// attempt's reservation is given back.
fn stop_unserializable(ctx: &Ctx, endpoint: &str, message: String, estimate: f64) {
    ctx.shutdown.stop(StopReason::Fatal {
        class: ErrorClass::Malformed,
        endpoint: endpoint.to_string(),
        message,
    });
    settle(ctx, estimate, None, false);
}

/// What a turned-away attempt (429, 503) says, and to whom. A 429 that came while every slot of
/// the in-flight window was sending and the pace let the start through at once is a **slot**
/// signal (the window is cut, not the pace); one that came while the pace held the starts back,
/// or with slots to spare, is a **rate** signal (the pace is cut, not the window); both when
/// both held.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Signal {
    slot: bool,
    rate: bool,
}

impl Signal {
    fn of(next: &Option<(ApiError, Next)>, at_limit: bool, paced: bool) -> Signal {
        let overload = matches!(next, Some((err, _)) if is_overload(err));
        Signal {
            slot: overload && at_limit,
            rate: overload && (paced || !at_limit),
        }
    }
}

/// The endpoint's pace learns from an ended attempt: the limits its answer advertised (and how
/// long after the request was sent it came), a rate
/// signal (weighed by the provider it names), and who answered.
fn pace_ended(
    pacer: &Pacer,
    turn: Turn,
    signal: Signal,
    advertised: Option<(Advertised, Duration)>,
    answered: bool,
    provider: Option<&str>,
) {
    if let Some((limits, age)) = &advertised {
        pacer.advertised(limits, *age);
    }
    let rejected = if signal.rate {
        pacer.rejection_weight(provider)
    } else {
        0.0
    };
    pacer.ended(turn.at, rejected, signal.slot || signal.rate);
    if let (true, Some(provider)) = (answered, provider) {
        pacer.answered_by(provider);
    }
}

/// Count one ended attempt: the budget settles, the limiter and the endpoint's health learn
/// from it (a dead endpoint stops the run), progress shows it. `slot`: a slot signal, sent with
/// that many requests sending (see `Sending::count`); `paced`:
/// the start waited for the endpoint's pace (its answer does not grow the in-flight window).
#[allow(clippy::too_many_arguments)]
fn account(
    ctx: &Ctx,
    endpoint_index: usize,
    endpoint: &str,
    record: &EncodedRecord,
    next: &Option<(ApiError, Next)>,
    estimate: f64,
    latency_ms: u64,
    slot: Option<usize>,
    paced: bool,
) {
    settle(ctx, estimate, record.meta.cost_usd, next.is_none());
    let completion_tokens = record.meta.completion_tokens.unwrap_or(0);
    match next {
        None => {
            let latency = Duration::from_millis(latency_ms);
            if paced {
                ctx.limiter.on_paced_success_after(latency);
            } else {
                ctx.limiter.on_success_after(latency);
            }
            ctx.health.success(endpoint_index);
        }
        Some((err, _)) => {
            if let Some(count) = slot {
                ctx.limiter.on_overload_at(count);
            } else {
                ctx.limiter.on_failure();
            }
            let message = scrub(&ctx.keys, &err.message);
            if let Some(dead) = ctx.health.failure(endpoint_index, err, &message) {
                ctx.shutdown.stop(StopReason::Unreachable {
                    consecutive: dead.consecutive,
                    first_error: dead.first_error,
                });
            }
        }
    }
    let done = !matches!(next, Some((_, Next::RetryAfter(_))));
    if let Some((err, _)) = next {
        ctx.progress.error_seen(err.class, || {
            format!(
                "endpoint {:?}: {}",
                endpoint,
                scrub(&ctx.keys, &err.message)
            )
        });
    }
    ctx.progress
        .attempt(record.meta.error_class, completion_tokens, done);
}

/// How long a turned-away request keeps its slot: about as long as an answer would. Handed back
/// at once, every slot above the server's capacity would cycle rejections at loopback speed.
fn overload_hold(ctx: &Ctx, next: &Option<(ApiError, Next)>) -> Duration {
    match next {
        Some((err, then)) if is_overload(err) => {
            let backoff = match then {
                Next::RetryAfter(delay) => *delay,
                _ => err.retry_after.unwrap_or(Duration::from_secs(1)),
            };
            ctx.limiter.rejection_hold(backoff)
        }
        _ => Duration::ZERO,
    }
}

/// How long to wait before the next attempt (`hold` already waited), or `None` when the prompt
/// is done: answered, given up, permanent, or a failure that stops the run (stopped here).
fn retry_delay(
    ctx: &Ctx,
    next: Option<(ApiError, Next)>,
    endpoint: &str,
    hold: Duration,
) -> Option<Duration> {
    match next {
        None | Some((_, Next::GiveUp)) | Some((_, Next::Permanent)) => None,
        Some((err, Next::StopRun)) => {
            ctx.shutdown.stop(StopReason::Fatal {
                class: err.class,
                endpoint: endpoint.to_string(),
                message: scrub(&ctx.keys, &err.message),
            });
            None
        }
        Some((_, Next::RetryAfter(delay))) => Some(delay.saturating_sub(hold)),
    }
}

/// A slot for the next attempt, or `None` if the run is stopping.
async fn acquire_or_stop(ctx: &Ctx) -> Option<Permit> {
    tokio::select! {
        permit = ctx.limiter.acquire() => Some(permit),
        _ = ctx.shutdown.stopping() => None,
    }
}

/// Wait for the request-rate limiter; `false` if the run is stopping.
async fn rate_ready(ctx: &Ctx, rate: &DefaultDirectRateLimiter) -> bool {
    tokio::select! {
        _ = rate.until_ready() => true,
        _ = ctx.shutdown.stopping() => false,
    }
}

/// The start's turn at the endpoint's pace (at once without one), or `None` if the run is
/// stopping.
async fn turn_of(ctx: &Ctx, pacer: Option<&Pacer>) -> Option<Turn> {
    match pacer {
        Some(pacer) => paced(ctx, pacer).await,
        None => Some(Turn {
            at: Instant::now(),
            waited: false,
        }),
    }
}

/// What held an ended attempt's start: (the in-flight window was at its limit, the pace held
/// it). Sent at the slot edge (more in flight than any answered lately, or as many near the
/// window's limit: `Limiter::at_slot_edge`), a 429 to it is the in-flight window's (a slot
/// limit), even below the window's limit and held by the pace.
fn held_by(ctx: &Ctx, sending: &Sending, answered: bool, waited: bool) -> (bool, bool) {
    if answered {
        ctx.limiter.admitted_at(sending.count);
    }
    let edge = ctx.limiter.at_slot_edge(sending.count);
    (sending.at_limit || edge, waited && !edge)
}

/// Wait for the endpoint's pace; the start's turn, or `None` if the run is stopping.
async fn paced(ctx: &Ctx, pacer: &Pacer) -> Option<Turn> {
    tokio::select! {
        started = pacer.start() => Some(started),
        _ = ctx.shutdown.stopping() => None,
    }
}

/// Sleep before a retry; `false` if the run is stopping.
async fn back_off(ctx: &Ctx, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = ctx.shutdown.stopping() => false,
    }
}

fn settle(ctx: &Ctx, estimate: f64, cost: Option<f64>, answered: bool) {
    if let Ok(mut budget) = ctx.budget.lock() {
        budget.settle(estimate, cost, answered);
    }
    ctx.budget_settled.notify_waiters();
}

/// 429, and 503 ("no provider available" / overloaded), are the server asking for less.
fn is_overload(err: &ApiError) -> bool {
    err.class == ErrorClass::RateLimited || err.http_status == Some(503)
}

/// `text` with every key of the run replaced.
pub(crate) fn scrub(keys: &[ApiKey], text: &str) -> String {
    keys.iter().fold(text.to_string(), |t, k| k.scrub(&t))
}

/// What every record of one attempt shares.
struct Head<'a> {
    id: &'a str,
    attempt: u32,
    endpoint: &'a str,
    request: &'a RawValue,
    started_at: String,
    source: &'a str,
}

fn success_record(
    ctx: &Ctx,
    head: &Head<'_>,
    outcome: RawChatOutcome,
) -> Result<EncodedRecord, serde_json::Error> {
    let usage = &believed_usage(ctx, &outcome.facts, head.endpoint);
    RecordRef {
        id: head.id,
        attempt: head.attempt,
        status: Status::Success,
        error_class: None,
        error: None,
        endpoint: head.endpoint,
        request: head.request,
        response: Some(&outcome.response),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        http_status: Some(outcome.http_status),
        provider: outcome.facts.provider.as_deref(),
        cost_usd: cost_of_usage(usage, ctx.prices.as_ref()),
        started_at: &head.started_at,
        latency_ms: outcome.latency_ms,
        first_byte_ms: outcome.first_byte_ms,
        not_before_ms: None,
        source: (!head.source.is_empty()).then_some(head.source),
        usage_flag: usage.doubt.map(UsageDoubt::as_str),
    }
    .encode()
}

/// An answer's usage as believed (a cost far above the price table's bound is not); a doubt is
/// named once on screen.
fn believed_usage(ctx: &Ctx, facts: &ResponseFacts, endpoint: &str) -> UsageNumbers {
    let prices = ctx.prices.as_ref().map(|p| (p.prompt, p.completion));
    let usage = usage_check::believed(&facts.usage, prices);
    if let Some(doubt) = usage.doubt {
        usage_check::say_once(doubt, facts.provider.as_deref(), endpoint);
    }
    usage
}

fn failure_record(
    ctx: &Ctx,
    head: &Head<'_>,
    err: &ApiError,
    latency_ms: u64,
) -> Result<EncodedRecord, serde_json::Error> {
    let mut body = err.body.clone();
    if let Some(body) = body.as_mut() {
        for key in &ctx.keys {
            key.scrub_json(body);
        }
    }
    let facts = body
        .as_ref()
        .map(ResponseFacts::of_value)
        .unwrap_or_default();
    let response = body.as_ref().map(serde_json::to_string).transpose()?;
    let usage = believed_usage(ctx, &facts, head.endpoint);
    let error = scrub(&ctx.keys, &err.message);
    RecordRef {
        id: head.id,
        attempt: head.attempt,
        status: Status::Failed,
        error_class: Some(err.class),
        error: Some(&error),
        endpoint: head.endpoint,
        request: head.request,
        cost_usd: cost_of_usage(&usage, ctx.prices.as_ref()),
        http_status: err.http_status,
        provider: facts.provider.as_deref(),
        response: response.as_deref(),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        started_at: &head.started_at,
        latency_ms,
        first_byte_ms: None,
        // The server's `Retry-After`, as a time: it holds for the next attempt even on resume.
        not_before_ms: err
            .retry_after
            .map(|after| unix_ms(SystemTime::now() + after)),
        source: (!head.source.is_empty()).then_some(head.source),
        usage_flag: usage.doubt.map(UsageDoubt::as_str),
    }
    .encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_with_every_slot_sending_is_a_slot_signal_and_one_the_pace_held_a_rate_signal() {
        let overload = Some((
            ApiError::new(ErrorClass::RateLimited, "429"),
            Next::RetryAfter(Duration::from_secs(1)),
        ));
        let slot = Signal {
            slot: true,
            rate: false,
        };
        let rate = Signal {
            slot: false,
            rate: true,
        };
        // Every slot sending, the pace let it through at once: the window is cut, not the pace.
        assert_eq!(Signal::of(&overload, true, false), slot);
        // The pace held it back, slots to spare: the pace is cut, not the window.
        assert_eq!(Signal::of(&overload, false, true), rate);
        // Neither held it: a rate the pace does not know yet.
        assert_eq!(Signal::of(&overload, false, false), rate);
        // Both: both.
        let both = Signal::of(&overload, true, true);
        assert!(both.slot && both.rate);
        // An answer, or another failure, is no signal.
        assert_eq!(Signal::of(&None, true, true), Signal::default());
        let other = Some((
            ApiError::new(ErrorClass::ServerError, "500"),
            Next::RetryAfter(Duration::from_secs(1)),
        ));
        assert_eq!(Signal::of(&other, true, true), Signal::default());
    }
}
