//! [`Pacer`]: spreads request starts at the rate an endpoint admits, beside the in-flight window
//! of [`Limiter`](super::concurrency::Limiter).
//!
//! A limit on requests per second cannot be seen by an in-flight window: slots are free, so
//! requests start in bursts, the provider's bucket empties, and the 429s come back together. A
//! pacer learns the rate from the answers and starts requests one interval apart:
//!
//! - **unpaced** until the starts of the last second hold more 429s (503s) than random ones
//!   explain (`beyond_noise`, the limiter's test). The rate then becomes what was admitted over
//!   the last second (at least a second: a provider's bucket holds about one second's worth).
//! - **paced**: a window starts at each cut; when its starts hold more rejections than noise, the
//!   rate becomes `rate · (1 - r)` (what was admitted), times [`MARGIN`] so the provider's
//!   bucket refills a little instead of sitting empty at the edge.
//! - after a cut, a **plateau** of [`SETTLE`] without growth, doubled each time a cut finds the
//!   same rate again (within 10%), up to `SETTLE · 2^`[`MAX_PLATEAU_DOUBLINGS`]; then growth by
//!   [`GROWTH`] a second, only while the pace is what holds the starts back (a pace that is not
//!   reached must not grow out of reach of a later burst).
//!
//! Random 429s (a provider's hiccups, a few percent of attempts) stay under the noise test, and a
//! rare window that passes it cuts once and grows back: they never pin the rate at [`MIN_RATE`].
//!
//! Starts wait in line (a fair async mutex): one task sleeps on the timer at a time, and a cut
//! applies to the very next start, not after a queue of reservations made at the old rate.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::concurrency::beyond_noise;

/// Span of starts judged (and at least this long when a rate is first measured).
pub const WINDOW: Duration = Duration::from_secs(1);
/// Fewest starts judged: at a few requests a second the window holds more than a second.
const MIN_STARTS: usize = 16;
/// A cut lands this far below the rate admitted (the provider's bucket refills by 3% a second).
pub const MARGIN: f64 = 0.97;
/// Plateau after a cut (the shortest).
pub const SETTLE: Duration = Duration::from_secs(2);
/// How many times the plateau doubles when cuts keep finding the same rate.
pub const MAX_PLATEAU_DOUBLINGS: u32 = 4;
/// Growth of the rate per second after the plateau, while the pace binds.
pub const GROWTH: f64 = 0.02;
/// The lowest rate (starts per second).
pub const MIN_RATE: f64 = 0.2;
/// A pace binds when the starts of the last window reach this share of it.
const BINDING: f64 = 0.8;

#[derive(Debug)]
struct State {
    /// Starts per second; `None`: unpaced.
    rate: Option<f64>,
    /// Earliest next start.
    next: Option<Instant>,
    /// Start times of this window's attempts, and of those rejected.
    starts: VecDeque<Instant>,
    rejections: VecDeque<Instant>,
    /// When the last cut was (the window starts there).
    cut_at: Option<Instant>,
    settle_until: Option<Instant>,
    grown_at: Option<Instant>,
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
                starts: VecDeque::new(),
                rejections: VecDeque::new(),
                cut_at: None,
                settle_until: None,
                grown_at: None,
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
        s.starts.push_back(now);
        s.prune(now);
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
        s.prune(now);
        if !rejected {
            s.grow(now);
            return;
        }
        // A rejection of a start before the last cut says nothing about the rate since.
        if s.cut_at.is_some_and(|cut| started < cut) {
            return;
        }
        s.rejections.push_back(started);
        let (n, k) = (s.starts.len(), s.rejections.len().min(s.starts.len()));
        if n >= MIN_STARTS && beyond_noise(k, n) {
            s.cut(n, k, now);
        }
    }
}

impl State {
    /// Drop starts older than the window while enough are left, and rejections older than them.
    fn prune(&mut self, now: Instant) {
        let horizon = now.checked_sub(WINDOW).unwrap_or(now);
        while self.starts.len() > MIN_STARTS && self.starts.front().is_some_and(|&t| t < horizon) {
            self.starts.pop_front();
        }
        if let Some(&oldest) = self.starts.front() {
            while self.rejections.front().is_some_and(|&t| t < oldest) {
                self.rejections.pop_front();
            }
        }
    }

    /// `k` of the window's `n` starts were turned away: the rate becomes what was admitted.
    fn cut(&mut self, n: usize, k: usize, now: Instant) {
        let share = k as f64 / n as f64;
        let admitted = match self.rate {
            Some(rate) => rate * (1.0 - share),
            None => {
                let span = self
                    .starts
                    .front()
                    .map_or(WINDOW, |&t| now.saturating_duration_since(t).max(WINDOW));
                (n - k) as f64 / span.as_secs_f64()
            }
        };
        let new = (admitted * MARGIN).max(MIN_RATE);
        self.plateau = match self.found {
            Some(before) if (before - new).abs() <= 0.1 * before.max(10.0) => {
                (self.plateau + 1).min(MAX_PLATEAU_DOUBLINGS)
            }
            _ => 0,
        };
        self.found = Some(new);
        self.rate = Some(new);
        self.cuts += 1;
        self.cut_at = Some(now);
        self.settle_until = Some(now + SETTLE * (1 << self.plateau));
        self.grown_at = Some(now);
        self.starts.clear();
        self.rejections.clear();
    }

    /// Once a second after the plateau, a pace that binds grows by [`GROWTH`].
    fn grow(&mut self, now: Instant) {
        let Some(rate) = self.rate else {
            return;
        };
        if self.settle_until.is_some_and(|t| now < t)
            || self
                .grown_at
                .is_some_and(|t| now.saturating_duration_since(t) < WINDOW)
        {
            return;
        }
        self.grown_at = Some(now);
        let span = self
            .starts
            .front()
            .map_or(WINDOW, |&t| now.saturating_duration_since(t).max(WINDOW));
        let starting = self.starts.len() as f64 / span.as_secs_f64();
        if starting >= BINDING * rate {
            self.rate = Some(rate * (1.0 + GROWTH));
        }
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
