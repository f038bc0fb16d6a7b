//! [`Pacer`]: spreads request starts at the rate an endpoint admits, beside the in-flight window
//! of [`Limiter`](super::concurrency::Limiter).
//!
//! A limit on requests per second cannot be seen by an in-flight window: slots are free, so
//! requests start in bursts, the provider's bucket empties, and the 429s come back together. A
//! pacer learns the rate from the answers and starts requests one interval apart.
//!
//! It judges **windows** of [`WINDOW`] (and at least [`MIN_STARTS`] starts): when a window's
//! starts hold more 429s (503s) than random ones explain (`beyond_noise`, the limiter's test), the
//! rate becomes what the window admitted per second, times [`MARGIN`] so the provider's bucket
//! refills a little instead of sitting empty at the edge. A window that had no rejection yet
//! restarts at the first one: from there the provider's bucket is empty, so what it admits over
//! the next second is its rate, not the rate plus a burst of saved-up tokens (a run's first
//! second, or a probe's).
//!
//! After a cut, a **plateau** of [`SETTLE`] without growth, doubled each time a cut finds the same
//! rate again (within 10%), up to `SETTLE · 2^`[`MAX_PLATEAU_DOUBLINGS`]; then growth by
//! [`GROWTH`] a window, doubling each window up to [`MAX_GROWTH`], only while the pace is what
//! holds the starts back (a pace that is not reached must not grow out of reach of a later burst).
//!
//! Random 429s (a provider's hiccups, a few percent of attempts) stay under the noise test, and a
//! rare window that passes it cuts once, by about its share, and grows back: they never pin the
//! rate at [`MIN_RATE`].
//!
//! Starts wait in line (a fair async mutex): one task sleeps on the timer at a time, and a cut
//! applies to the very next start, not after a queue of reservations made at the old rate.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::concurrency::beyond_noise;

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
pub const GROWTH: f64 = 0.02;
/// The fastest growth per window.
pub const MAX_GROWTH: f64 = 0.04;
/// The lowest rate (starts per second).
pub const MIN_RATE: f64 = 0.2;
/// A pace binds when a window's starts reach this share of it.
const BINDING: f64 = 0.8;

#[derive(Debug)]
struct State {
    /// Starts per second; `None`: unpaced.
    rate: Option<f64>,
    /// Earliest next start.
    next: Option<Instant>,
    /// The window being counted: since when, its starts, and how many of them were turned away.
    since: Option<Instant>,
    starts: usize,
    rejected: usize,
    /// The window's last rejection: when, and how many of its starts were admitted by then.
    last_rejection: Option<(Instant, usize)>,
    /// Whether the window restarted at its first rejection.
    emptied: bool,
    settle_until: Option<Instant>,
    /// Growth per window now.
    growth: f64,
    /// The rate the last cut found, and how many cuts in a row found it.
    found: Option<f64>,
    plateau: u32,
    cuts: u64,
}

/// The start pacing of one endpoint.
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
                rate: None,
                next: None,
                since: None,
                starts: 0,
                rejected: 0,
                last_rejection: None,
                emptied: false,
                settle_until: None,
                growth: GROWTH,
                found: None,
                plateau: 0,
                cuts: 0,
            }),
            line: tokio::sync::Mutex::new(()),
        }
    }

    /// The current rate (starts per second), `None` while unpaced.
    pub fn rate(&self) -> Option<f64> {
        self.state.lock().ok().and_then(|s| s.rate)
    }

    /// How many times the rate was cut.
    pub fn cuts(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.cuts)
    }

    /// Wait for this start's turn; returns the start time (to hand to [`Pacer::ended`]).
    pub async fn start(&self) -> Instant {
        if self.rate().is_none() {
            if let Ok(started) = self.take_turn(Instant::now()) {
                return started;
            }
        }
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
        if let Some(rate) = s.rate {
            let step = interval(rate);
            let next = s.next.unwrap_or(now);
            if next > now {
                return Err(next);
            }
            // A turn taken a little late (the timer's millisecond) is made up by the next one,
            // so the rate holds at hundreds a second; after an idle spell, at most one extra.
            let base = next.max(now.checked_sub(step).unwrap_or(now));
            s.next = Some(base + step);
        }
        s.since.get_or_insert(now);
        s.starts += 1;
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
        let Some(since) = s.since else {
            return;
        };
        if rejected && !s.emptied {
            // The provider's bucket is empty from here: the window measures its rate.
            s.emptied = true;
            s.since = Some(now);
            s.starts = 0;
            s.rejected = 0;
        } else if rejected && started >= since {
            s.rejected += 1;
            let admitted = s.starts.saturating_sub(s.rejected);
            s.last_rejection = Some((now, admitted));
        }
        let Some(since) = s.since else {
            return;
        };
        let span = now.saturating_duration_since(since);
        if span >= WINDOW && s.starts >= MIN_STARTS.min(4 * span.as_secs() as usize + 1) {
            s.close_window(span, now);
        }
    }
}

impl State {
    /// Judge the window that ends `now`, `span` long, and open the next.
    fn close_window(&mut self, span: Duration, now: Instant) {
        let (n, k) = (self.starts, self.rejected.min(self.starts));
        let per_second = |count: usize| count as f64 / span.as_secs_f64();
        if beyond_noise(k, n) {
            // Between the window's first rejection and its last the bucket was empty: what was
            // admitted in between is the provider's rate, even when the starts stopped before
            // the window's end (the in-flight window holding its slots for turned-away ones).
            let between = self
                .since
                .zip(self.last_rejection)
                .and_then(|(t0, (t1, a))| {
                    let d = t1.saturating_duration_since(t0);
                    (d >= WINDOW / 2).then(|| a as f64 / d.as_secs_f64())
                });
            let admitted = between.map_or(per_second(n - k), |b| b.max(per_second(n - k)));
            self.cut((admitted * MARGIN).max(MIN_RATE), now);
        } else if let Some(rate) = self.rate {
            let settled = self.settle_until.is_none_or(|t| now >= t);
            if settled && per_second(n) >= BINDING * rate {
                self.rate = Some(rate * (1.0 + self.growth));
                self.growth = (self.growth * 2.0).min(MAX_GROWTH);
            }
        }
        self.since = Some(now);
        self.starts = 0;
        self.rejected = 0;
        self.last_rejection = None;
        self.emptied = false;
    }

    fn cut(&mut self, new: f64, now: Instant) {
        self.plateau = match self.found {
            Some(before) if (before - new).abs() <= 0.1 * before.max(10.0) => {
                (self.plateau + 1).min(MAX_PLATEAU_DOUBLINGS)
            }
            _ => 0,
        };
        self.found = Some(new);
        self.rate = Some(new);
        self.cuts += 1;
        self.settle_until = Some(now + SETTLE * (1 << self.plateau));
        self.growth = GROWTH;
    }
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
            s.rate = Some(10.0);
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
}
