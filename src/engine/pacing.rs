//! [`Pacer`]: spreads request starts at the rate an endpoint admits, beside the in-flight window
//! of [`Limiter`](super::concurrency::Limiter).
//!
//! A limit on requests per second cannot be seen by an in-flight window: slots are free, so
//! requests start in bursts, the provider's bucket empties, and the 429s come back together. A
//! pacer learns the rate from the answers and starts requests one interval apart.
//!
//! - **Slow start.** The first starts go [`START_RATE`] a second, doubled every [`STEP`] while
//!   the pace is what holds them back. Nothing is known about the rate before the first 429, and
//!   a provider's bucket admits everything until it is empty: what was admitted by then is its
//!   burst plus its rate times the time taken. The first 429 of a binding pace therefore sets the
//!   rate to `admitted / (elapsed + BURST)` (a burst of [`BURST`] worth of the rate, as the
//!   bucket of `src/sim/capacity.rs` and most providers hold), times [`MARGIN`]. A first 429 that
//!   comes while the pace does not bind (the in-flight window holds the starts back: a slot limit)
//!   ends slow start where the rate is; the windows below judge from there.
//! - **Windows** of [`WINDOW`] (and at least [`MIN_STARTS`] starts): when a window's starts hold
//!   more 429s (503s) than the endpoint's noise explains (`congested`) — however many, one
//!   congestion event — the rate becomes what the window admitted per second times [`MARGIN`]
//!   (the provider's bucket is empty then: what it admits is its rate), so it refills a little
//!   instead of sitting empty at the edge. Otherwise, after a plateau, the rate grows by
//!   [`GROWTH`] a window, doubling up to [`MAX_GROWTH`], while the pace binds.
//!   Growth is faster ([`MAX_FAST_GROWTH`]) far below the rate last found, or with none found.
//! - **Noise.** Two cuts in a row that do not lower the share turned away (each next judged
//!   window still holds at least half of it) were not about the rate: random 429s. They are
//!   undone and that share becomes the endpoint's noise, which later windows must exceed. So
//!   fault-injected 429s never pin the rate at [`MIN_RATE`].
//! - A congested window in which the pace did not bind (the in-flight window held the starts
//!   back: a slot limit) leaves the cut to the in-flight window; the pace is only brought down
//!   to a little above the starts.
//! - **Advertised limits.** An answer's `X-RateLimit-*` headers (see [`Advertised`]) cap the rate
//!   at what they allow: the remaining requests over the time to the reset, or the limit a second.
//!
//! After a cut, a **plateau** of [`SETTLE`] without growth, doubled each time a cut finds the same
//! rate again (within 10%), up to `SETTLE · 2^`[`MAX_PLATEAU_DOUBLINGS`].
//!
//! Starts wait in line (a fair async mutex): one task sleeps on the timer at a time, and a cut
//! applies to the very next start, not after a queue of reservations made at the old rate.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Shortest window judged (a provider's bucket holds about one second's worth).
pub const WINDOW: Duration = Duration::from_secs(1);
/// Fewest starts in a window judged (at a few requests a second, windows are longer).
const MIN_STARTS: usize = 16;
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
/// The lowest rate (starts per second).
pub const MIN_RATE: f64 = 0.2;
/// The first starts' rate (a second's worth is the in-flight window's first wave).
pub const START_RATE: f64 = 16.0;
/// Slow start doubles the rate this often while the pace binds.
pub const STEP: Duration = Duration::from_millis(250);
/// The burst a provider's bucket holds, in seconds of its rate.
pub const BURST: f64 = 1.0;
/// A pace binds when a span's starts reach this share of it.
const BINDING: f64 = 0.8;
/// How far above the starts a pace that did not bind is kept when its window was congested.
const UNBOUND: f64 = 1.3;
/// The lowest share of random 429s assumed (before any is seen).
const MIN_NOISE: f64 = 0.005;

#[derive(Debug)]
struct State {
    /// Starts per second.
    rate: f64,
    /// Earliest next start.
    next: Option<Instant>,
    slow_start: bool,
    /// Slow start: its first start, how many started since, and the current step (since when,
    /// its starts) and whether the last step's pace bound.
    origin: Option<Instant>,
    started_total: usize,
    step: Option<(Instant, usize)>,
    /// The last step's starts per second; the rate before the last doubling.
    step_rate: f64,
    before_doubling: Option<f64>,
    /// Whether the first 429's estimate was made.
    estimated: bool,
    /// The last cut: a 429 of a start before it says nothing about the rate since.
    cut_at: Option<Instant>,
    /// The window being counted: since when, its starts, and how many of them were turned away.
    since: Option<Instant>,
    starts: usize,
    rejected: usize,
    /// The share of attempts random 429s turn away here (learned from undone cuts).
    noise: f64,
    /// The last cuts, to undo if they prove to be noise: the rate before, the share turned away
    /// that made the first, and how many cuts since failed to lower it.
    undo: Option<(f64, f64, u32)>,
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

/// The start pacing of one endpoint (or of one provider behind it).
#[derive(Debug)]
pub struct Pacer {
    state: Mutex<State>,
    /// The line of starts waiting their turn.
    line: tokio::sync::Mutex<()>,
}

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
                next: None,
                slow_start: true,
                origin: None,
                started_total: 0,
                step: None,
                step_rate: 0.0,
                before_doubling: None,
                estimated: false,
                cut_at: None,
                since: None,
                starts: 0,
                rejected: 0,
                noise: 0.0,
                undo: None,
                settle_until: None,
                growth: GROWTH,
                found: None,
                plateau: 0,
                cuts: 0,
                cap: None,
            }),
            line: tokio::sync::Mutex::new(()),
        }
    }

    /// The current rate (starts per second), advertised caps included.
    pub fn rate(&self) -> Option<f64> {
        self.state.lock().ok().map(|s| s.pace(Instant::now()))
    }

    /// How many times the rate was cut.
    pub fn cuts(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.cuts)
    }

    /// Wait for this start's turn; returns the start time (to hand to [`Pacer::ended`]).
    pub async fn start(&self) -> Instant {
        let _line = self.line.lock().await;
        loop {
            let now = Instant::now();
            match self.take_turn(now) {
                Ok(started) => return started,
                Err(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
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

    /// An attempt started at `started` ended; `rejected`: turned away (429, 503).
    pub fn ended(&self, started: Instant, rejected: bool) {
        self.ended_at(started, rejected, Instant::now());
    }

    fn ended_at(&self, started: Instant, rejected: bool, now: Instant) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.slow_start {
            if rejected {
                s.slow_start_rejection(started, now);
            }
            return;
        }
        let Some(since) = s.since else {
            return;
        };
        if rejected && started >= since {
            s.rejected += 1;
        }
        let span = now.saturating_duration_since(since);
        // Rejections enough to judge end the window early: a quarter second of them is enough
        // to measure the rate, and each further one is a prompt waiting out its `Retry-After`.
        let early = rejected && span >= WINDOW / 4 && congested(s.rejected, s.starts, s.noise);
        if early || span >= WINDOW && s.starts >= MIN_STARTS.min(4 * span.as_secs() as usize + 1) {
            s.close_window(span, now);
        }
    }

    /// Cap the rate by what an answer's rate-limit headers allow.
    pub fn advertised(&self, limits: &Advertised) {
        let now = Instant::now();
        if let (Some(rate), Ok(mut s)) = (limits.rate(), self.state.lock()) {
            s.cap = Some((rate.max(MIN_RATE), now + limits.holds()));
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

    /// Count a slow-start start; double the rate at the end of a step whose pace bound.
    fn slow_start_step(&mut self, now: Instant) {
        self.origin.get_or_insert(now);
        self.started_total += 1;
        let (since, starts) = self.step.get_or_insert((now, 0));
        *starts += 1;
        let span = now.saturating_duration_since(*since).as_secs_f64();
        if span >= STEP.as_secs_f64() {
            self.step_rate = *starts as f64 / span;
            self.step = Some((now, 0));
            if self.step_rate >= BINDING * self.rate {
                self.before_doubling = Some(self.rate);
                self.rate *= 2.0;
            }
        }
    }

    /// Starts per second lately (the current step, or the last one while it is young).
    fn recent_rate(&self, now: Instant) -> f64 {
        match self.step {
            Some((since, n)) if now.saturating_duration_since(since) >= STEP / 2 => {
                n as f64 / now.saturating_duration_since(since).as_secs_f64()
            }
            _ => self.step_rate,
        }
    }

    /// A 429 in slow start. The first: the provider's bucket is empty, what it admitted so far
    /// is its burst plus its rate over the time taken; slow start goes on from that estimate (a
    /// slot limit is not a bucket: the estimate is low, and doubling leaves it in a few steps).
    /// The next: the rate before the last doubling held, and slow start ends there.
    fn slow_start_rejection(&mut self, started: Instant, now: Instant) {
        if self.cut_at.is_some_and(|t| started < t) {
            return; // sent before the last cut
        }
        let binding = self.recent_rate(now) >= BINDING * self.rate;
        if !self.estimated {
            self.estimated = true;
            let origin = self.origin.unwrap_or(started);
            // The starts after the rejected one were sent into an empty bucket too.
            let after = self.rate * now.saturating_duration_since(started).as_secs_f64();
            let admitted = (self.started_total as f64 - 1.0 - after).max(1.0);
            let elapsed = started.saturating_duration_since(origin).as_secs_f64();
            let estimate = admitted / (elapsed + BURST) * MARGIN;
            self.rate = estimate.min(self.rate).max(MIN_RATE);
            self.before_doubling = None;
            self.step = Some((now, 0));
            self.cut_at = Some(now);
            self.cuts += 1;
            return;
        }
        self.slow_start = false;
        if binding {
            let held = self.before_doubling.unwrap_or(self.rate * MARGIN);
            self.cut(held.max(MIN_RATE), now);
        }
        // Else the in-flight window held the starts back (a slot limit): it is the one to cut.
        self.open_window(now);
    }

    fn open_window(&mut self, now: Instant) {
        self.since = Some(now);
        self.starts = 0;
        self.rejected = 0;
    }

    /// Judge the window that ends `now`, `span` long, and open the next.
    fn close_window(&mut self, span: Duration, now: Instant) {
        let (n, k) = (self.starts, self.rejected.min(self.starts));
        let share = k as f64 / n.max(1) as f64;
        let per_second = |count: usize| count as f64 / span.as_secs_f64();
        let undo = self.undo.take();
        let binding = per_second(n) >= BINDING * self.pace(now);
        if congested(k, n, self.noise) && !binding {
            // The in-flight window, not the pace, held the starts back: it cuts itself. The pace
            // stays a little above the starts (so it binds again if they burst).
            self.rate = self.rate.min(per_second(n) * UNBOUND).max(MIN_RATE);
        } else if congested(k, n, self.noise) {
            let before = self.rate;
            let admitted = (per_second(n - k) * MARGIN).max(MIN_RATE);
            match undo {
                // Two cuts in a row did not lower the share turned away: random 429s, not the
                // rate (a cut that measured the rate low is followed by one that finds it).
                Some((rate, first, 1)) if share >= first / 2.0 => {
                    self.noise = self.noise.max(share.min(MAX_NOISE));
                    self.rate = self.rate.max(rate);
                    self.found = None;
                }
                Some((rate, first, _)) if share >= first / 2.0 => {
                    self.cut(admitted, now);
                    self.undo = Some((rate, first, 1));
                }
                _ => {
                    self.cut(admitted, now);
                    self.undo = (share < MAX_UNDO_SHARE).then_some((before, share, 0));
                }
            }
        } else {
            let settled = self.settle_until.is_none_or(|t| now >= t);
            if settled && binding {
                self.rate *= 1.0 + self.growth;
                // Far below the rate last found (or none found), growth may go fast.
                let near = self.found.is_some_and(|f| self.rate >= 0.9 * f);
                let max = if near { MAX_GROWTH } else { MAX_FAST_GROWTH };
                self.growth = (self.growth * 2.0).min(max);
            }
        }
        self.open_window(now);
    }

    fn cut(&mut self, new: f64, now: Instant) {
        self.plateau = match self.found {
            Some(before) if (before - new).abs() <= 0.1 * before.max(10.0) => {
                (self.plateau + 1).min(MAX_PLATEAU_DOUBLINGS)
            }
            _ => 0,
        };
        self.found = Some(new);
        self.rate = new;
        self.cuts += 1;
        self.cut_at = Some(now);
        self.settle_until = Some(now + SETTLE * (1 << self.plateau));
        self.growth = GROWTH;
    }
}

/// The most noise learned (a provider turning away more at random is treated as at capacity).
const MAX_NOISE: f64 = 0.1;
/// A cut over a larger share turned away is never undone as noise.
const MAX_UNDO_SHARE: f64 = 0.15;

/// Whether `rejected` of `started` is more than the endpoint's `noise` explains: above it by two
/// standard deviations of the count (and at least two).
fn congested(rejected: usize, started: usize, noise: f64) -> bool {
    let p = noise.max(MIN_NOISE);
    let expected = p * started as f64;
    let sd = (expected * (1.0 - p)).sqrt();
    rejected >= 2 && rejected as f64 > expected + 2.0 * sd
}

/// Time between starts at `rate` per second.
fn interval(rate: f64) -> Duration {
    Duration::from_secs_f64(1.0 / rate.max(MIN_RATE))
}

/// The rate limits an answer advertises: `X-RateLimit-Limit` / `-Remaining` / `-Reset`
/// (OpenRouter and others) or OpenAI's `x-ratelimit-limit-requests` / `-remaining-requests` /
/// `-reset-requests`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Advertised {
    pub limit: Option<f64>,
    pub remaining: Option<f64>,
    /// Time until the limit is whole again.
    pub reset: Option<Duration>,
}

/// How long a cap from advertised limits holds without a newer answer.
const ADVERTISED_HOLDS: Duration = Duration::from_secs(2);

impl Advertised {
    /// Read from a response's headers (names in any case); `unix_now`: the time now since the
    /// epoch (a reset may be a Unix timestamp). `None` when no rate-limit header is there.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        unix_now: Duration,
    ) -> Option<Advertised> {
        let mut a = Advertised::default();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let value = value.trim();
            match name.as_str() {
                "x-ratelimit-limit" | "x-ratelimit-limit-requests" => a.limit = value.parse().ok(),
                "x-ratelimit-remaining" | "x-ratelimit-remaining-requests" => {
                    a.remaining = value.parse().ok()
                }
                "x-ratelimit-reset" | "x-ratelimit-reset-requests" => {
                    a.reset = parse_reset(value, unix_now)
                }
                _ => {}
            }
        }
        (a != Advertised::default()).then_some(a)
    }

    /// The rate the limits sustain: the used part of the limit comes back by the reset (a token
    /// bucket refilling `limit - remaining` over `reset`); `None` when they do not say.
    pub fn rate(&self) -> Option<f64> {
        let (limit, remaining, reset) = (self.limit?, self.remaining?, self.reset?);
        let secs = reset.as_secs_f64();
        (secs >= 0.01 && limit > remaining).then(|| (limit - remaining) / secs)
    }

    fn holds(&self) -> Duration {
        self.reset
            .map_or(ADVERTISED_HOLDS, |r| r.max(ADVERTISED_HOLDS))
    }
}

/// A reset: a duration with units (`1s`, `6m0s`, `20ms`: OpenAI's), a Unix timestamp in
/// milliseconds (OpenRouter's) or seconds, or seconds from now.
fn parse_reset(value: &str, unix_now: Duration) -> Option<Duration> {
    if let Ok(number) = value.parse::<f64>() {
        if !number.is_finite() || number < 0.0 {
            return None;
        }
        let at = if number >= 1e12 {
            Duration::from_secs_f64(number / 1000.0)
        } else if number >= 1e9 {
            Duration::from_secs_f64(number)
        } else {
            return Some(Duration::from_secs_f64(number));
        };
        return Some(at.saturating_sub(unix_now));
    }
    let mut total = 0.0;
    let mut rest = value;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
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
                    pacer.ended_at(start, turned_away, now);
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
    fn random_429s_do_not_pin_the_rate() {
        let pacer = Pacer::new();
        // No capacity limit; 3% of attempts turned away at random, 200 wanted a second.
        let (started, _, lowest) = simulate(&pacer, 200.0, 600, 500, 0.03, |_| true);
        let rate = started as f64 / 500.0;
        eprintln!(
            "3% random 429s: {rate:.1}/s started, lowest pace {lowest:.1}, {} cuts",
            pacer.cuts()
        );
        assert!(rate >= 0.9 * 200.0, "{rate:.1}/s started of 200 wanted");
        assert!(lowest >= 100.0, "the pace fell to {lowest:.1}");
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
    fn advertised_limits_are_read_in_both_spellings_and_cap_the_pace() {
        let unix_now = Duration::from_secs(1_700_000_000);
        // OpenRouter's: the reset a Unix timestamp in milliseconds.
        let openrouter = [
            ("X-RateLimit-Limit", "20"),
            ("X-RateLimit-Remaining", "10"),
            ("X-RateLimit-Reset", "1700000002000"),
        ];
        let a = Advertised::from_headers(openrouter, unix_now).expect("headers");
        assert_eq!(a.reset, Some(Duration::from_secs(2)));
        assert_eq!(a.rate(), Some(5.0), "10 used come back over 2 s");
        // OpenAI's: a duration with units.
        let openai = [
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
        ];
        let a = Advertised::from_headers(openai, unix_now).expect("headers");
        assert_eq!(a.reset, Some(Duration::from_millis(120)));
        assert_eq!(
            parse_reset("6m0s", unix_now),
            Some(Duration::from_secs(360))
        );
        assert_eq!(parse_reset("soon", unix_now), None);
        assert_eq!(Advertised::from_headers([("x-other", "1")], unix_now), None);

        let pacer = Pacer::new();
        pacer.advertised(&Advertised {
            limit: Some(20.0),
            remaining: Some(10.0),
            reset: Some(Duration::from_secs(2)),
        });
        assert_eq!(pacer.rate(), Some(5.0));
    }
}
