//! [`Pacer`]: spreads request starts at the rate an endpoint admits, beside the in-flight window
//! of [`Limiter`](super::concurrency::Limiter).
//!
//! A limit on requests per second cannot be seen by an in-flight window: slots are free, so
//! requests start in bursts, the provider's bucket empties, and the 429s come back together. A
//! pacer learns the rate from the answers and starts requests one interval apart.
//!
//! - **Windows** of [`WINDOW`] (and at least [`MIN_STARTS`] starts, closed early once a quarter
//!   of one holds more 429s than noise explains): a window whose starts hold more 429s (503s)
//!   than the endpoint's noise explains (`congested`) is one congestion event, however many. The
//!   rate becomes what the window admitted per second, over the share noise lets through, times
//!   [`MARGIN`] (the provider's bucket is empty then: what it admits is its rate), so it refills a
//!   little instead of sitting empty at the edge. Otherwise, after a plateau, the rate grows by
//!   [`GROWTH`] a second, doubling each window up to [`MAX_GROWTH`], while the pace binds;
//!   faster ([`MAX_FAST_GROWTH`]) away from the rate last found (below it by a tenth, or above
//!   it by half with nothing turned away: it was not the provider's), with none found, or
//!   far below what was admitted before. It does not grow in the **endgame**, when the prompts
//!   yet to start would all start within [`ENDGAME`].
//! - **Slow start.** The first starts go [`START_RATE`] a second, doubled every [`STEP`] (of at
//!   least `STEP_STARTS` starts) while the pace binds and the window holds no more 429s than
//!   noise explains. A provider's bucket
//!   admits everything until it is empty: what was admitted by the first congested window is its
//!   burst plus its rate times the time taken since it was last full, so that window sets the
//!   rate to the largest `admitted since / (time since + BURST)` over the steps of slow start (a
//!   burst of [`BURST`] worth of the rate, as the bucket of `src/sim/capacity.rs` and most
//!   providers hold), times [`MARGIN`].
//! - **Noise**, 429s that come whatever the rate (a provider's hiccups, fault injection), must not
//!   pin the rate at [`MIN_RATE`]. Two signs tell them: (1) two cuts in a row that do not lower
//!   the share turned away (each next congested window still holds at least half of it, and
//!   less than [`MAX_NOISE`]: a slow start far past a bucket still turns most away) — after a
//!   rate limit the second cut measures the empty bucket and the share falls — so the cuts are
//!   undone (slow start resumed if it was cut) and that share becomes the endpoint's noise, which
//!   later windows must exceed; (2) a congested window paced far below ([`FAR_BELOW`]) what a
//!   window admitted per second before (a bucket admits at most its rate plus its burst in a
//!   window): its share is noise, learned at once, with no cut.
//! - Only **rate signals** reach the pacer: the scheduler leaves to the in-flight window a 429
//!   that the pace did not hold back and that came while every slot of the window was sending,
//!   or was sent at the slot edge: with more in flight than any answered lately, or as many near
//!   the window's limit (a slot limit turns away only what goes past it; an empty bucket turns
//!   away requests sent beside answered ones; see `src/engine/scheduler.rs` and
//!   `Limiter::at_slot_edge`).
//! - **Advertised limits.** An answer's `X-RateLimit-*` headers (see [`Advertised`]) cap the rate
//!   at what they allow: the remaining requests over the time to the reset.
//!
//! After a cut, a **plateau** of [`SETTLE`] without growth, doubled each time a cut finds the same
//! rate again (within 10%), up to `SETTLE · 2^`[`MAX_PLATEAU_DOUBLINGS`].
//!
//! Starts wait in line (a fair async mutex): one task sleeps on the timer at a time, and a cut
//! applies to the very next start, not after a queue of reservations made at the old rate.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::api::Advertised;

/// Shortest window judged (a provider's bucket holds about one second's worth).
pub const WINDOW: Duration = Duration::from_secs(1);
/// Fewest starts in a window judged (at a few requests a second, windows are longer: a window
/// of five starts cannot tell a 429 of the rate from one at random).
const MIN_STARTS: usize = 16;
/// A window is judged after this long whatever its starts.
const LONGEST_WINDOW: Duration = Duration::from_secs(8);
/// A cut lands this far below the rate admitted (the provider's bucket refills by 3% a second).
pub const MARGIN: f64 = 0.97;
/// Plateau after a cut (the shortest).
pub const SETTLE: Duration = Duration::from_secs(2);
/// How many times the plateau doubles when cuts keep finding the same rate.
pub const MAX_PLATEAU_DOUBLINGS: u32 = 4;
/// Growth of the rate in the first window after the plateau; it doubles each window that keeps
/// the pace binding, up to [`MAX_GROWTH`], so a rate measured low is left in a few seconds.
pub const GROWTH: f64 = 0.01;
/// The fastest growth per window near the rate last found (a probe past it costs a window of
/// rejections at this share, hidden by the provider's bucket until it is empty).
pub const MAX_GROWTH: f64 = 0.02;
/// The fastest growth per window far below it.
pub const MAX_FAST_GROWTH: f64 = 0.25;
/// A pace does not grow when the prompts yet to start would all start within this at its rate: a
/// probe's rejections wait out a `Retry-After` (a second or more), which at the end of a run is
/// wall time nobody uses, for at most a few percent more over the seconds left.
pub const ENDGAME: Duration = Duration::from_secs(4);
/// The lowest rate (starts per second).
pub const MIN_RATE: f64 = 0.2;
/// The first starts' rate (a second's worth is the in-flight window's first wave).
pub const START_RATE: f64 = 16.0;
/// Slow start doubles the rate this often while the pace binds, once a step holds
/// [`STEP_STARTS`]: fast where a bucket's burst hides the rate for a fraction of a second, and
/// not on two starts' evidence at a few a second (a 5/s bucket was overshot six times over).
pub const STEP: Duration = Duration::from_millis(125);
/// Fewest starts in a slow-start step.
const STEP_STARTS: usize = 4;
/// The burst a provider's bucket holds, in seconds of its rate.
pub const BURST: f64 = 1.0;
/// A pace this far below the best rate a window admitted is below any bucket that admitted it
/// (a window of [`WINDOW`] admits at most twice a bucket's rate: its burst and its refill).
pub const FAR_BELOW: f64 = 0.4;
/// The best admitted rate fades by this each judged window (a limit that drops is followed).
const BEST_FADES: f64 = 0.9;
/// The pace stays this far under an advertised rate (starts a timer's millisecond late are made
/// up by the next, and a bucket kept at its edge turns those away).
const ADVERTISED_MARGIN: f64 = 0.98;
/// A pace binds when a span's starts reach this share of it.
const BINDING: f64 = 0.8;
/// The lowest share of random 429s assumed (before any is seen).
const MIN_NOISE: f64 = 0.005;
/// The most noise learned (a provider turning away more at random is treated as at capacity).
const MAX_NOISE: f64 = 0.5;
/// How far beyond noise (standard deviations of the count) a window is congested: a window a
/// second judges hundreds of starts, and at two a window of 3% noise would be cut every half
/// minute.
const SDS: f64 = 2.5;
/// The same for closing a window early: tested at every rejection, so stricter.
const EARLY_SDS: f64 = 3.5;
/// A slow-start window this long measures what the provider admits per second. Short: a
/// measure too high costs one more cut, one too low (the burst estimate, where the 429s were a
/// slot limit's) a pace held far below the provider for many seconds (50 slots: 118/s of 250).
const MEASURES: Duration = Duration::from_millis(50);
/// Slow-start steps remembered for the burst estimate (a minute at [`STEP`]).
const MAX_MARKS: usize = 240;
/// The least share turned away in a window that ends slow start.
const SLOW_START_EXIT: f64 = 0.1;
/// Fewest rejections that close a window early (a bucket overflowing turns away many at once; a
/// couple of random 429s in a quarter second are not enough to judge by).
const EARLY_REJECTED: f64 = 4.0;
/// The noise learned is pooled with this many starts' worth of [`MIN_NOISE`]: a stray 429 in a
/// window of sixteen is not a noise of 6%.
const NOISE_PRIOR_STARTS: f64 = 100.0;
/// How many starts' worth a noise proved by undone cuts weighs.
const NOISE_FOUND_STARTS: f64 = 1000.0;
/// Starts after a cut that judge it (three windows at 16 a second).
const PROBATION_STARTS: f64 = 48.0;
/// Noise learned before counts this much each time a window is learned from (about the last
/// twenty windows count).
const NOISE_FADES: f64 = 0.95;

/// One start's turn: when it started and whether the pace held it back (the pace binds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turn {
    pub at: Instant,
    pub waited: bool,
}

/// A chain of cuts on probation: they may prove to be noise. The rate before the first, the
/// share that made it, how many cuts, whether the first ended slow start, and what the windows
/// since the last cut started and had turned away.
#[derive(Debug, Clone, Copy)]
struct Probation {
    rate: f64,
    share: f64,
    cuts: u32,
    slow_start: bool,
    starts: f64,
    rejected: f64,
    /// The noise known before the first cut.
    noise: f64,
}

#[derive(Debug)]
struct State {
    /// Starts per second.
    rate: f64,
    /// Prompts yet to have their first start (see [`Pacers::waiting`]).
    waiting: usize,
    /// Earliest next start.
    next: Option<Instant>,
    slow_start: bool,
    /// Slow start's current step: since when, its starts.
    step: Option<(Instant, usize)>,
    /// Slow start's first start, and the starts and rejections since (its burst estimate).
    origin: Option<Instant>,
    started_total: usize,
    rejected_total: f64,
    /// At each slow-start step's end: when, and how many had been admitted since the origin
    /// (the bucket may have been full at any of them; see [`State::target`]).
    marks: Vec<(Instant, f64)>,
    /// The window being counted: since when, its starts, and how many of them were turned away
    /// (a 429 naming one provider counts as that provider's share of the endpoint).
    since: Option<Instant>,
    starts: usize,
    rejected: f64,
    /// The share of attempts random 429s turn away here, learned from windows known to be below
    /// the rate (after a cut, or far below what was admitted before): their starts and
    /// rejections (fading), and the share.
    noise_starts: f64,
    noise_rejected: f64,
    noise: f64,
    /// The best rate a window of at least [`WINDOW`] admitted, fading.
    best: f64,
    probation: Option<Probation>,
    settle_until: Option<Instant>,
    /// Growth per window now.
    growth: f64,
    /// The rate the last cut found, and how many cuts in a row found it.
    found: Option<f64>,
    plateau: u32,
    cuts: u64,
    /// A cap from advertised limits, and until when it holds.
    cap: Option<(f64, Instant)>,
}

/// The start pacing of one endpoint.
#[derive(Debug)]
pub struct Pacer {
    state: Mutex<State>,
    /// The line of starts waiting their turn.
    line: tokio::sync::Mutex<()>,
    /// Who answered lately, per provider named (fading counts): a 429 that names one provider
    /// counts as its share of the answers (see [`Pacer::rejection_weight`]).
    providers: Mutex<Vec<(String, f64)>>,
}

/// Each answer fades the providers' counts by this (about the last few hundred answers count).
const PROVIDER_FADES: f64 = 0.995;
/// The least a provider's 429 counts (a provider that never answered still slows a little).
const MIN_PROVIDER_WEIGHT: f64 = 0.1;

impl Default for Pacer {
    fn default() -> Self {
        Pacer::new()
    }
}

impl Pacer {
    pub fn new() -> Pacer {
        Pacer {
            state: Mutex::new(State {
                rate: START_RATE,
                waiting: usize::MAX,
                next: None,
                slow_start: true,
                step: None,
                origin: None,
                started_total: 0,
                rejected_total: 0.0,
                marks: Vec::new(),
                since: None,
                starts: 0,
                rejected: 0.0,
                noise_starts: 0.0,
                noise_rejected: 0.0,
                noise: 0.0,
                best: 0.0,
                probation: None,
                settle_until: None,
                growth: GROWTH,
                found: None,
                plateau: 0,
                cuts: 0,
                cap: None,
            }),
            line: tokio::sync::Mutex::new(()),
            providers: Mutex::new(Vec::new()),
        }
    }

    /// An answer came from `provider` (as the answer names it).
    pub fn answered_by(&self, provider: &str) {
        let Ok(mut providers) = self.providers.lock() else {
            return;
        };
        for (_, count) in providers.iter_mut() {
            *count *= PROVIDER_FADES;
        }
        match providers.iter_mut().find(|(name, _)| name == provider) {
            Some((_, count)) => *count += 1.0,
            None => providers.push((provider.to_string(), 1.0)),
        }
    }

    /// How much a 429 counts against this endpoint's rate: one that names no provider (the
    /// endpoint's own limit) counts whole; one that names a provider behind it (OpenRouter's
    /// `metadata.provider_name`) counts as that provider's share of the recent answers — its
    /// limit slows its share, not all of them — and whole while no provider has answered.
    pub fn rejection_weight(&self, provider: Option<&str>) -> f64 {
        let Some(provider) = provider else {
            return 1.0;
        };
        let Ok(providers) = self.providers.lock() else {
            return 1.0;
        };
        let total: f64 = providers.iter().map(|(_, count)| count).sum();
        if total <= 0.0 {
            return 1.0;
        }
        let own = providers
            .iter()
            .find(|(name, _)| name == provider)
            .map_or(0.0, |(_, count)| *count);
        (own / total).max(MIN_PROVIDER_WEIGHT)
    }

    /// The current rate (starts per second), advertised caps included.
    pub fn rate(&self) -> Option<f64> {
        self.state.lock().ok().map(|s| s.pace(Instant::now()))
    }

    /// How many times the rate was cut.
    pub fn cuts(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.cuts)
    }

    /// The share of attempts learned to be turned away at random.
    pub fn noise(&self) -> f64 {
        self.state.lock().map_or(0.0, |s| s.noise)
    }

    /// Wait for this start's turn (to hand to [`Pacer::ended`]).
    pub async fn start(&self) -> Turn {
        let mut waited = false;
        let _line = match self.line.try_lock() {
            Ok(line) => line,
            Err(_) => {
                waited = true;
                self.line.lock().await
            }
        };
        loop {
            let now = Instant::now();
            match self.take_turn(now) {
                Ok(at) => return Turn { at, waited },
                Err(at) => {
                    waited = true;
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await
                }
            }
        }
    }

    /// Start now if the pace allows (`Ok`), else `Err(when it will)`.
    fn take_turn(&self, now: Instant) -> Result<Instant, Instant> {
        let Ok(mut s) = self.state.lock() else {
            return Ok(now);
        };
        let step = interval(s.pace(now));
        let next = s.next.unwrap_or(now);
        if next > now {
            return Err(next);
        }
        // A turn taken a little late (the timer's millisecond) is made up by the next one, so
        // the rate holds at hundreds a second; after an idle spell, at most one extra.
        let base = next.max(now.checked_sub(step).unwrap_or(now));
        s.next = Some(base + step);
        s.since.get_or_insert(now);
        s.starts += 1;
        if s.slow_start {
            s.slow_start_step(now);
        }
        Ok(now)
    }

    /// An attempt that started at `started` ended; `rejected`: how much it counts as turned away
    /// by this endpoint's rate (0 answered; 1 a 429 or 503 of the endpoint; a provider's share
    /// for a 429 that names one provider); `turned_away`: a 429 or 503 of any kind (a slot
    /// limit's too: not admitted, for slow start's burst estimate).
    pub fn ended(&self, started: Instant, rejected: f64, turned_away: bool) {
        self.ended_at(started, rejected, turned_away, Instant::now());
    }

    fn ended_at(&self, started: Instant, rejected: f64, turned_away: bool, now: Instant) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.slow_start && turned_away {
            s.rejected_total += 1.0;
        }
        let Some(since) = s.since else {
            return;
        };
        // A start of a window already judged says nothing about the rate since.
        if started < since {
            return;
        }
        let rejected = rejected.clamp(0.0, 1.0);
        s.rejected += rejected;
        let span = now.saturating_duration_since(since);
        // Rejections enough to judge end the window early: a quarter second of them is enough
        // to measure the rate, and each further one is a prompt waiting out its `Retry-After`.
        // In slow start at once: the pace doubles past a bucket's rate while its burst lasts,
        // and every start after it is empty is turned away.
        let early = rejected > 0.0
            && (span >= WINDOW / 4 || s.slow_start)
            && s.rejected >= EARLY_REJECTED
            && beyond(s.rejected, s.starts, s.noise, EARLY_SDS);
        let enough = s.starts >= MIN_STARTS || span >= LONGEST_WINDOW;
        if early || span >= WINDOW && enough {
            s.close_window(span, now);
        }
    }

    /// Cap the rate by what an answer's rate-limit headers allow; `age`: how long after the
    /// request was sent the answer came (the server set them when it admitted the request).
    pub fn advertised(&self, limits: &Advertised, age: Duration) {
        let now = Instant::now();
        if let (Some(rate), Ok(mut s)) = (limits.rate_since(age), self.state.lock()) {
            s.cap = Some((
                (rate * ADVERTISED_MARGIN).max(MIN_RATE),
                now + limits.holds(),
            ));
        }
    }
}

impl State {
    /// The pace at `now`: the rate, under an advertised cap while it holds.
    fn pace(&self, now: Instant) -> f64 {
        match self.cap {
            Some((cap, until)) if now < until => self.rate.min(cap),
            _ => self.rate,
        }
    }

    /// Count a slow-start start; double the rate at the end of a step whose pace bound, unless
    /// the window so far holds more rejections than noise explains.
    fn slow_start_step(&mut self, now: Instant) {
        self.origin.get_or_insert(now);
        self.started_total += 1;
        let (since, starts) = self.step.get_or_insert((now, 0));
        *starts += 1;
        let span = now.saturating_duration_since(*since).as_secs_f64();
        if span >= STEP.as_secs_f64() && *starts >= STEP_STARTS {
            let step_rate = *starts as f64 / span;
            self.step = Some((now, 0));
            if self.marks.len() >= MAX_MARKS {
                // The oldest (the origin, kept apart, tells about as much).
                self.marks.remove(0);
            }
            self.marks
                .push((now, self.started_total as f64 - self.rejected_total));
            // Not past an advertised cap: the rate would be left far above it when it lapses.
            let capped = self.pace(now) < self.rate;
            if step_rate >= BINDING * self.pace(now)
                && !capped
                && !congested(self.rejected, self.starts, self.noise)
            {
                self.rate *= 2.0;
                tracing::debug!(
                    target: "draftgen::pacing",
                    rate = format_args!("{:.1}", self.rate),
                    "slow start doubles"
                );
            }
        }
    }

    fn open_window(&mut self, now: Instant) {
        self.since = Some(now);
        self.starts = 0;
        self.rejected = 0.0;
    }

    /// Judge the window that ends `now`, `span` long, and open the next.
    fn close_window(&mut self, span: Duration, now: Instant) {
        let n = self.starts;
        let k = self.rejected.min(n as f64);
        let share = k / n.max(1) as f64;
        let secs = span.as_secs_f64().max(1e-3);
        let admitted = (n as f64 - k) / secs;
        let best_before = self.best;
        self.best *= BEST_FADES;
        if span >= WINDOW {
            self.best = self.best.max(admitted);
        }
        let binding = n as f64 / secs >= BINDING * self.pace(now);
        let probation = self.probation.take();
        let (rate_before, noise_before) = (self.rate, self.noise);
        let verdict = self.judge(probation, n, k, binding, (admitted, span), best_before, now);
        tracing::debug!(
            target: "draftgen::pacing",
            rate = format_args!("{rate_before:.1}"),
            new_rate = format_args!("{:.1}", self.rate),
            starts = n,
            span_ms = span.as_millis() as u64,
            admitted = format_args!("{admitted:.1}"),
            rejected = format_args!("{:.3}", share),
            noise = format_args!("{noise_before:.3}"),
            binding,
            verdict,
            "window judged"
        );
        self.open_window(now);
    }

    /// The verdict on a window of `n` starts, `k` turned away: grow, plateau, slow start, noise
    /// or cut (applied to the state); its name, for the trace.
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &mut self,
        probation: Option<Probation>,
        n: usize,
        k: f64,
        binding: bool,
        (admitted, span): (f64, Duration),
        best_before: f64,
        now: Instant,
    ) -> &'static str {
        let share = k / n.max(1) as f64;
        if !congested(k, n, self.noise) {
            // Within noise at or below the rate a cut found (not while growing past it, where a
            // rate limit's first few 429s would pass for noise), or with none found after noise
            // undid the cuts: what it turned away is noise.
            let below = self.found.is_none_or(|f| self.rate <= f);
            if below && !self.slow_start {
                self.learn_noise(n as f64, k);
            }
            self.probation = probation.and_then(|p| self.on_probation(p, n as f64, k));
            self.grow(binding, best_before, span, now)
        } else if self.slow_start && share < SLOW_START_EXIT {
            // Slow start overflowing a bucket turns away a large share at once (the pace doubles
            // past its rate); a few percent is noise, or the rate's edge, which the next
            // doubling makes plain. Not learned as noise: at a bucket's edge it was not (a
            // noise of 4% learned there set the cuts 4% above 50/s).
            "slow start, few"
        } else if self.pace(now) < FAR_BELOW * best_before {
            // Far below what was admitted before: no bucket turned these away.
            self.learn_noise(n as f64, k);
            self.undo(probation);
            "noise far below"
        } else {
            self.congested(probation, share, (admitted, span), now)
        }
    }

    /// A congested window: a cut, or (the cuts before did not lower the share) noise. Two cuts in
    /// a row: one that measured a bucket's burst is followed by one that finds its rate, and the
    /// share falls; random 429s keep it.
    fn congested(
        &mut self,
        probation: Option<Probation>,
        share: f64,
        (admitted, span): (f64, Duration),
        now: Instant,
    ) -> &'static str {
        match probation {
            // Cut twice, or to a third, and the share did not fall: noise — unless it turns
            // most starts away. Not on one cut of slow start: its overshoot of a bucket is cut
            // to a third as a rule, landing near the rate, where a window of a few starts
            // still holds a quarter turned away (20/s learned a noise of 25% so).
            Some(p)
                if share >= p.share / 2.0
                    && share < MAX_NOISE
                    && (p.cuts >= 2 || (self.rate * 3.0 <= p.rate && !p.slow_start)) =>
            {
                // The least of the shares seen (the first was picked for being high).
                let starts = p.starts + self.starts as f64;
                let since = (p.rejected + self.rejected) / starts.max(1.0);
                self.noise_found(since.min(p.share));
                self.undo(Some(p));
                "noise found, cuts undone"
            }
            Some(p) if share >= p.share / 2.0 => {
                self.cut(self.target(admitted, span, now), now);
                self.probation = Some(Probation {
                    cuts: p.cuts + 1,
                    starts: 0.0,
                    rejected: 0.0,
                    ..p
                });
                "cut again"
            }
            _ => {
                let first = Probation {
                    rate: self.rate,
                    share,
                    cuts: 1,
                    slow_start: self.slow_start,
                    starts: 0.0,
                    rejected: 0.0,
                    noise: self.noise,
                };
                self.cut(self.target(admitted, span, now), now);
                self.probation = Some(first);
                "cut"
            }
        }
    }

    /// A window within noise after a cut: counted; once enough starts are in, the cuts are judged.
    /// Below the rate the cut found, what is still turned away is noise: if it is more than the
    /// noise known before the cut explains and the cut did not lower it much, the cut was for
    /// noise: undone. (A share that fell to a tenth is a cut that landed a few percent above a
    /// bucket's rate; undoing it sent slow start past the bucket again.)
    fn on_probation(&mut self, mut p: Probation, n: f64, k: f64) -> Option<Probation> {
        p.starts += n;
        p.rejected += k;
        if p.starts < PROBATION_STARTS {
            return Some(p);
        }
        let share = p.rejected / p.starts;
        if congested(p.rejected, p.starts as usize, p.noise) && share >= p.share / 2.0 {
            self.undo(Some(p));
        }
        None
    }

    /// Not congested: after the plateau, grow while the pace binds (slow start doubles by step).
    fn grow(
        &mut self,
        binding: bool,
        best_before: f64,
        span: Duration,
        now: Instant,
    ) -> &'static str {
        let settled = self.settle_until.is_none_or(|t| now >= t);
        // Capped by advertised limits: the cap binds, not the rate.
        let capped = self.pace(now) < self.rate;
        if self.slow_start {
            return "slow start";
        }
        if !settled {
            return "plateau";
        }
        if !binding || capped {
            return "not binding";
        }
        if (self.waiting as f64) < self.rate * ENDGAME.as_secs_f64() {
            return "endgame";
        }
        // Per second, not per window: at a few starts a second a window is several seconds
        // long, and 1% a window took a minute to find 30%.
        let seconds = (span.as_secs_f64() / WINDOW.as_secs_f64()).clamp(1.0, 4.0);
        self.rate *= 1.0 + self.growth * seconds;
        // Far below the rate last found (or none found, or what was admitted before), growth
        // may go fast.
        // Past the rate last found by half with no congestion, it was not the provider's (a
        // slot limit's 429s taken for a rate's, or a rate that rose): fast again. Not sooner:
        // growing at a few percent a second, a bucket's burst hides the rate until it is
        // passed by about a fifth (a band of a tenth went fast at 22/s against 20/s and
        // overshot to 27/s).
        let near = self
            .found
            .is_some_and(|f| (0.9 * f..=1.5 * f).contains(&self.rate))
            && self.rate >= FAR_BELOW * best_before;
        let max = if near { MAX_GROWTH } else { MAX_FAST_GROWTH };
        self.growth = (self.growth * 2.0).min(max);
        "grow"
    }

    /// The rate a congested window's `admitted` per second says: what the provider let through
    /// beside its noise, under [`MARGIN`]; the first cut of slow start counts the bucket's burst.
    fn target(&self, admitted: f64, span: Duration, now: Instant) -> f64 {
        let through = 1.0 - self.noise;
        let window = admitted / through * MARGIN;
        if !self.slow_start {
            return window;
        }
        // A window long enough to measure, closed by few rejections: no bucket overflowed at
        // a pace far past its rate (that turns away most starts at once and closes the window
        // in milliseconds); what it admitted is what the provider serves (a slot limit's
        // throughput, its 429s mistaken for a rate's), not less.
        // Not a long one: at a few starts a second it holds the bucket's burst.
        let measured = if (MEASURES..=WINDOW / 2).contains(&span) {
            window
        } else {
            0.0
        };
        // Not the window's own measure: slow start closes it at once on a bucket's first
        // rejections, a few milliseconds that measure nothing. A bucket of `BURST` seconds of
        // rate `r` admits at most `r · (BURST + t)` in any span `t`, and exactly that in the span
        // since it was last full: empty now, `r` is the largest such measure over the spans
        // ending now. From the origin alone, the slow seconds before the pace reached the rate
        // (the bucket full, its refill unused) counted as the rate's: 500/s was measured 323.
        // Less the last start, whose 429 may still be on its way (at a few a second one start
        // too many measured over half a second is a rate 10% too high, and its 429s look like
        // noise).
        let total = self.started_total as f64 - self.rejected_total - 1.0;
        let origin = self.origin.map(|o| (o, 0.0));
        let rate = origin
            .iter()
            .chain(self.marks.iter())
            .map(|&(at, before)| {
                let span = now.saturating_duration_since(at).as_secs_f64();
                (total - before) / (span + BURST)
            })
            .fold(1.0, f64::max);
        (rate / through * MARGIN).max(measured)
    }

    /// `rejected` of `starts` were turned away below the rate: noise, pooled with what was
    /// learned before (fading, so a provider that calms down is followed).
    fn learn_noise(&mut self, starts: f64, rejected: f64) {
        self.noise_starts = self.noise_starts * NOISE_FADES + starts;
        self.noise_rejected = self.noise_rejected * NOISE_FADES + rejected;
        let prior = NOISE_PRIOR_STARTS * MIN_NOISE;
        self.noise = ((self.noise_rejected + prior) / (self.noise_starts + NOISE_PRIOR_STARTS))
            .min(MAX_NOISE);
    }

    /// Cuts that did not lower the share turned away prove a noise of at least `share`: it
    /// weighs as much as [`NOISE_FOUND_STARTS`] starts, fading as windows are learned from.
    fn noise_found(&mut self, share: f64) {
        let share = share.min(MAX_NOISE);
        if share > self.noise {
            self.noise_starts = NOISE_FOUND_STARTS;
            self.noise_rejected =
                share * (NOISE_FOUND_STARTS + NOISE_PRIOR_STARTS) - MIN_NOISE * NOISE_PRIOR_STARTS;
            self.noise = share;
        }
    }

    /// Cuts that proved to be noise are undone (slow start resumed if they ended it).
    fn undo(&mut self, probation: Option<Probation>) {
        if let Some(p) = probation {
            self.rate = self.rate.max(p.rate);
            if p.slow_start {
                self.slow_start = true;
                self.step = None;
            }
        }
        self.found = None;
        self.settle_until = None;
        self.growth = GROWTH;
    }

    fn cut(&mut self, new: f64, now: Instant) {
        let new = new.max(MIN_RATE);
        self.plateau = match self.found {
            Some(before) if (before - new).abs() <= 0.1 * before.max(10.0) => {
                (self.plateau + 1).min(MAX_PLATEAU_DOUBLINGS)
            }
            _ => 0,
        };
        self.slow_start = false;
        self.found = Some(new);
        self.rate = new;
        self.cuts += 1;
        self.settle_until = Some(now + SETTLE * (1 << self.plateau));
        self.growth = GROWTH;
    }
}

/// Whether `rejected` of `started` is more than the endpoint's `noise` explains: above it by
/// [`SDS`] standard deviations of the count (and at least two).
fn congested(rejected: f64, started: usize, noise: f64) -> bool {
    beyond(rejected, started, noise, SDS)
}

/// Whether `rejected` of `started` is above what `noise` explains by `sds` standard deviations.
fn beyond(rejected: f64, started: usize, noise: f64, sds: f64) -> bool {
    let p = noise.max(MIN_NOISE);
    let expected = p * started as f64;
    let sd = (expected * (1.0 - p)).sqrt();
    rejected >= 2.0 && rejected > expected + sds * sd
}

/// Time between starts at `rate` per second.
fn interval(rate: f64) -> Duration {
    Duration::from_secs_f64(1.0 / rate.max(MIN_RATE))
}

/// One [`Pacer`] per endpoint of the pool (in its order).
#[derive(Debug)]
pub struct Pacers(Vec<Pacer>);

impl Pacers {
    pub fn new(endpoints: usize) -> Pacers {
        Pacers((0..endpoints).map(|_| Pacer::new()).collect())
    }

    /// The pacer of endpoint `index`.
    pub fn get(&self, index: usize) -> Option<&Pacer> {
        self.0.get(index)
    }

    /// `n` prompts are yet to have their first start: a pace no longer grows once they would
    /// all start within [`ENDGAME`] at its rate.
    pub fn waiting(&self, n: usize) {
        for pacer in &self.0 {
            if let Ok(mut state) = pacer.state.lock() {
                state.waiting = n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed-seed LCG in `0..1`.
    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) as f64 / (1u64 << 31) as f64
        }
    }

    /// Simulated time: a client that wants to start `demand` requests a second, against a
    /// provider answering at once that admits `admit(now)` and turns away a `random` share on
    /// top. Returns (started, rejected) over the last `measured` seconds, and the lowest rate
    /// the pacer held in them.
    fn simulate(
        pacer: &Pacer,
        demand: f64,
        seconds: u64,
        measured: u64,
        random: f64,
        mut admit: impl FnMut(Instant) -> bool,
    ) -> (u64, u64, f64) {
        let t0 = Instant::now();
        let step = Duration::from_secs_f64(1.0 / demand);
        let mut random_draw = lcg(7);
        let (mut started, mut rejected, mut lowest) = (0, 0, f64::INFINITY);
        let mut now = t0;
        let mut wanted_at = t0;
        while now < t0 + Duration::from_secs(seconds) {
            let counting = now >= t0 + Duration::from_secs(seconds - measured);
            match pacer.take_turn(now) {
                Ok(start) => {
                    let turned_away = !admit(now) || random_draw() < random;
                    pacer.ended_at(start, f64::from(u8::from(turned_away)), turned_away, now);
                    if counting {
                        started += 1;
                        rejected += u64::from(turned_away);
                        lowest = lowest.min(pacer.rate().unwrap_or(f64::INFINITY));
                    }
                    wanted_at += step;
                    now = now.max(wanted_at);
                }
                Err(at) => now = at,
            }
        }
        (started, rejected, lowest)
    }

    /// A provider's bucket: `rps` a second, holding one second's worth.
    fn bucket(rps: f64) -> impl FnMut(Instant) -> bool {
        let mut tokens = rps;
        let mut at: Option<Instant> = None;
        move |now| {
            let elapsed = at.map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
            tokens = (tokens + elapsed * rps).min(rps);
            at = Some(now);
            let admitted = tokens >= 1.0;
            if admitted {
                tokens -= 1.0;
            }
            admitted
        }
    }

    #[test]
    fn a_rate_limit_is_found_and_held_with_few_rejections() {
        for rps in [5.0, 50.0, 500.0] {
            let pacer = Pacer::new();
            // Twice the rate wanted; the last 100 of 120 simulated seconds measured.
            let (started, rejected, _) = simulate(&pacer, 2.0 * rps, 120, 100, 0.0, bucket(rps));
            let admitted = (started - rejected) as f64 / 100.0;
            let share = rejected as f64 / started as f64;
            eprintln!(
                "{rps}/s: {admitted:.1}/s admitted, {:.1}% rejected, {} cuts, rate {:?}",
                100.0 * share,
                pacer.cuts(),
                pacer.rate()
            );
            // Bounds generous for a simulation (at 5/s a window holds few starts to judge by).
            assert!(admitted >= 0.9 * rps, "{rps}/s: {admitted:.1}/s admitted");
            assert!(share <= 0.1, "{rps}/s: {:.1}% rejected", 100.0 * share);
        }
    }

    #[test]
    fn a_pace_does_not_probe_when_the_run_is_about_to_end() {
        use std::cell::Cell;
        let pacers = Pacers::new(1);
        let Some(pacer) = pacers.get(0) else {
            panic!("one pacer");
        };
        // A bucket of 50/s for a minute, then no limit: for 40 s fewer prompts are left than
        // 4 s at the pace (it holds), then many (it grows).
        let t0 = Instant::now();
        let mut limited = bucket(50.0);
        let (at_60, at_100) = (Cell::new(None), Cell::new(None));
        simulate(pacer, 100.0, 160, 10, 0.0, |now| {
            let t = now.saturating_duration_since(t0).as_secs();
            match t {
                0..60 => return limited(now),
                60..100 => {
                    at_60.set(at_60.get().or(pacer.rate()));
                    pacers.waiting(150);
                }
                _ => {
                    at_100.set(at_100.get().or(pacer.rate()));
                    pacers.waiting(100_000);
                }
            }
            true
        });
        assert_eq!(at_60.get(), at_100.get(), "held while the run ends");
        assert!(
            pacer.rate() > at_100.get(),
            "{:?} after {:?}",
            pacer.rate(),
            at_100.get()
        );
    }

    #[test]
    fn random_429s_do_not_pin_the_rate() {
        for random in [0.03, 0.3] {
            let pacer = Pacer::new();
            // No capacity limit; a share of attempts turned away at random, 200 wanted a second.
            let (started, _, lowest) = simulate(&pacer, 200.0, 600, 500, random, |_| true);
            let rate = started as f64 / 500.0;
            eprintln!(
                "{random} random 429s: {rate:.1}/s started, lowest pace {lowest:.1}, {} cuts, noise {:.3}",
                pacer.cuts(),
                pacer.noise()
            );
            assert!(
                rate >= 0.9 * 200.0,
                "{random}: {rate:.1}/s started of 200 wanted"
            );
            // A dip of a cut or two before they prove to be noise, never a pin.
            assert!(lowest >= 80.0, "{random}: the pace fell to {lowest:.1}");
        }
    }

    #[test]
    fn random_429s_are_learned_quickly_and_a_rate_limit_behind_them_still_found() {
        // The first 30 s: with 30% turned away at random, the pace still reaches most of 200.
        let pacer = Pacer::new();
        let (started, _, _) = simulate(&pacer, 200.0, 30, 20, 0.3, |_| true);
        let rate = started as f64 / 20.0;
        eprintln!("30% random: {rate:.1}/s in the first 30 s");
        assert!(rate >= 0.5 * 200.0, "{rate:.1}/s started of 200 wanted");
        // A bucket of 50/s behind 3% random 429s: found, and its 429s stay few.
        let pacer = Pacer::new();
        let (started, rejected, _) = simulate(&pacer, 100.0, 120, 100, 0.03, bucket(50.0));
        let admitted = (started - rejected) as f64 / 100.0;
        let share = rejected as f64 / started as f64;
        eprintln!(
            "50/s behind 3% random: {admitted:.1}/s admitted, {:.1}% rejected, noise {:.3}",
            100.0 * share,
            pacer.noise()
        );
        assert!(admitted >= 0.85 * 50.0, "{admitted:.1}/s admitted");
        assert!(share <= 0.15, "{:.1}% rejected", 100.0 * share);
    }

    #[test]
    fn a_providers_429_counts_as_its_share_of_the_answers() {
        let pacer = Pacer::new();
        assert_eq!(
            pacer.rejection_weight(Some("A")),
            1.0,
            "nobody answered yet"
        );
        for i in 0..100 {
            pacer.answered_by(if i % 10 == 0 { "B" } else { "A" });
        }
        let (a, b) = (
            pacer.rejection_weight(Some("A")),
            pacer.rejection_weight(Some("B")),
        );
        assert!((a - 0.9).abs() < 0.05 && (b - 0.1).abs() < 0.05, "{a} {b}");
        assert_eq!(pacer.rejection_weight(None), 1.0, "the endpoint's own 429");
        assert_eq!(pacer.rejection_weight(Some("C")), MIN_PROVIDER_WEIGHT);
    }

    #[test]
    fn a_pace_spreads_starts_one_interval_apart() {
        let pacer = Pacer::new();
        let t0 = Instant::now();
        if let Ok(mut s) = pacer.state.lock() {
            s.rate = 10.0;
            s.slow_start = false;
        }
        assert_eq!(pacer.take_turn(t0), Ok(t0));
        assert_eq!(pacer.take_turn(t0), Err(t0 + Duration::from_millis(100)));
        let late = t0 + Duration::from_millis(101);
        assert_eq!(pacer.take_turn(late), Ok(late));
        assert_eq!(
            pacer.take_turn(late),
            Err(t0 + Duration::from_millis(200)),
            "a turn taken late is made up by the next"
        );
    }

    #[test]
    fn advertised_limits_cap_the_pace() {
        let pacer = Pacer::new();
        pacer.advertised(
            &Advertised {
                limit: Some(20.0),
                remaining: Some(10.0),
                reset: Some(Duration::from_millis(1900)),
            },
            Duration::from_millis(100),
        );
        assert_eq!(pacer.rate(), Some(5.0 * ADVERTISED_MARGIN));
    }
}
