//! Progress: counters the request tasks update, shown as an indicatif bar on a terminal, as plain
//! periodic log lines otherwise, or not at all.
//!
//! One line says everything an operator watching a days-long run needs, each figure labelled with
//! its scope: prompts done of total and dollars spent over the whole run (`run:`); prompts ended,
//! successes, failures, request and output-token rates of this session (`session:`); an ETA from
//! the recent rate (`ETA ?` until there is one); requests in flight against the current
//! concurrency limit; errors by class. The first error of each class is also shown verbatim, once,
//! so a run where nothing works says why at once instead of only counting.

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::concurrency::Limiter;
use crate::api::ErrorClass;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, plain lines otherwise.
    #[default]
    Auto,
    Bar,
    Plain,
    None,
}

impl std::str::FromStr for ProgressMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ProgressMode::Auto),
            "bar" => Ok(ProgressMode::Bar),
            "plain" => Ok(ProgressMode::Plain),
            "none" => Ok(ProgressMode::None),
            other => Err(format!(
                "unknown progress mode {other:?}: expected auto, bar, plain or none"
            )),
        }
    }
}

impl ProgressMode {
    /// `Auto` decided against the real stderr.
    pub fn resolve(self) -> ProgressMode {
        match self {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Plain,
            other => other,
        }
    }
}

/// Counts for this session.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Prompts that reached an end this session (success, permanent failure, retries used up).
    pub done: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub attempts: u64,
    pub errors: BTreeMap<ErrorClass, u64>,
    pub completion_tokens: u64,
}

/// How far back the ETA looks for its rate: long enough to smooth bursts, short enough to follow
/// a run that slowed down (rate limits, a provider going away).
const ETA_WINDOW: Duration = Duration::from_secs(120);
/// Below this much history, or this many prompts ended in it, the rate is no basis for an ETA.
const ETA_MIN_SPAN: Duration = Duration::from_secs(5);
const ETA_MIN_DONE: u64 = 3;

/// The live progress of a run.
#[derive(Debug)]
pub struct Progress {
    stats: Mutex<Stats>,
    /// (when, prompts ended this session) as seen by the last lines, oldest first, within
    /// [`ETA_WINDOW`] (plus the one sample just before it).
    history: Mutex<VecDeque<(Instant, u64)>>,
    /// The first error of each class (endpoint and message), and whether it was shown yet.
    first_errors: Mutex<BTreeMap<ErrorClass, (String, bool)>>,
    started: Instant,
    /// Prompts in the input.
    total: u64,
    /// Prompts already finished when this session started.
    finished_before: u64,
    limiter: Arc<Limiter>,
    budget: Arc<Mutex<Budget>>,
}

impl Progress {
    pub fn new(
        total: u64,
        finished_before: u64,
        limiter: Arc<Limiter>,
        budget: Arc<Mutex<Budget>>,
    ) -> Progress {
        let started = Instant::now();
        Progress {
            stats: Mutex::new(Stats::default()),
            history: Mutex::new(VecDeque::from([(started, 0)])),
            first_errors: Mutex::new(BTreeMap::new()),
            started,
            total,
            finished_before,
            limiter,
            budget,
        }
    }

    /// An attempt ended with `error` (None: success) and `completion_tokens`; `prompt_done` if the
    /// prompt needs no more attempts this session.
    pub fn attempt(&self, error: Option<ErrorClass>, completion_tokens: u64, prompt_done: bool) {
        if let Ok(mut s) = self.stats.lock() {
            s.attempts += 1;
            s.completion_tokens += completion_tokens;
            match error {
                None => s.succeeded += 1,
                Some(class) => *s.errors.entry(class).or_default() += 1,
            }
            if prompt_done {
                s.done += 1;
                if error.is_some() {
                    s.failed += 1;
                }
            }
        }
    }

    /// An attempt failed with `class`: keep its message if it is the first of its class.
    /// `message` is only called then (it scrubs keys, which costs a copy).
    pub fn error_seen(&self, class: ErrorClass, message: impl FnOnce() -> String) {
        if let Ok(mut first) = self.first_errors.lock() {
            first.entry(class).or_insert_with(|| (message(), false));
        }
    }

    /// First errors not shown yet, as lines, marked shown.
    pub fn take_new_errors(&self) -> Vec<String> {
        let Ok(mut first) = self.first_errors.lock() else {
            return Vec::new();
        };
        first
            .iter_mut()
            .filter(|(_, (_, shown))| !*shown)
            .map(|(class, (message, shown))| {
                *shown = true;
                format!("first {} error: {message}", class_name(*class))
            })
            .collect()
    }

    pub fn stats(&self) -> Stats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The one-line status.
    pub fn line(&self) -> String {
        self.line_at(Instant::now())
    }

    fn line_at(&self, now: Instant) -> String {
        let s = self.stats();
        let elapsed = now.duration_since(self.started).as_secs_f64().max(1e-3);
        let done = self.finished_before + s.done;
        let rate = s.attempts as f64 / elapsed;
        let tok_rate = s.completion_tokens as f64 / elapsed;
        let (spent, max) = self
            .budget
            .lock()
            .map(|b| (b.spent(), b.max()))
            .unwrap_or((0.0, None));
        let left = self.total.saturating_sub(done);
        let eta = match self.history.lock() {
            Ok(mut history) => {
                remember(&mut history, now, s.done);
                eta(&history, left)
            }
            Err(_) => None,
        };
        let eta = match (left, eta) {
            (0, _) => "0s".to_string(),
            (_, Some(eta)) => human_duration(eta),
            (_, None) => "?".to_string(),
        };
        let money = match max {
            Some(max) => format!("${spent:.4}/${max:.2}"),
            None => format!("${spent:.4}"),
        };
        let mut line = format!(
            "run: {done}/{} done, {money} | session: {} done ({} ok, {} failed), {rate:.1} req/s, {tok_rate:.0} tok/s | ETA {eta} | {}",
            self.total,
            s.done,
            s.succeeded,
            s.failed,
            in_flight(self.limiter.in_flight(), self.limiter.limit()),
        );
        if !s.errors.is_empty() {
            let errors: Vec<String> = s
                .errors
                .iter()
                .map(|(class, n)| format!("{}={n}", class_name(*class)))
                .collect();
            line.push_str(" | errors ");
            line.push_str(&errors.join(" "));
        }
        line
    }

    /// Show progress until the task is dropped (aborted) by the engine.
    pub async fn report(self: Arc<Self>, mode: ProgressMode, plain_every: Duration) {
        match mode.resolve() {
            ProgressMode::Bar => {
                let bar = ProgressBar::with_draw_target(
                    Some(self.total),
                    ProgressDrawTarget::stderr_with_hz(4),
                );
                bar.set_style(
                    ProgressStyle::with_template("{bar:30} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                let _guard = FinishOnDrop(bar.clone(), Arc::clone(&self));
                show_notes_above(Some(&bar));
                loop {
                    for line in take_notes() {
                        bar.println(line);
                    }
                    for line in self.take_new_errors() {
                        bar.println(line);
                    }
                    bar.set_position(self.finished_before + self.stats().done);
                    bar.set_message(self.line());
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            ProgressMode::Plain => {
                let _guard = ErrorsOnDrop(Arc::clone(&self));
                let mut next_line = Instant::now() + plain_every;
                loop {
                    // First errors at once; the status line every `plain_every`.
                    tokio::time::sleep(plain_every.min(Duration::from_millis(250))).await;
                    for line in self.take_new_errors() {
                        eprintln!("{line}");
                    }
                    if Instant::now() >= next_line {
                        eprintln!("progress: {}", self.line());
                        next_line += plain_every;
                    }
                }
            }
            ProgressMode::None | ProgressMode::Auto => std::future::pending().await,
        }
    }
}

/// Leaves the bar's final state on screen when the reporter is aborted (brought up to date
/// first: the last periodic update can be up to 250 ms old).
struct FinishOnDrop(ProgressBar, Arc<Progress>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        let (bar, progress) = (&self.0, &self.1);
        for line in take_notes() {
            bar.println(line);
        }
        show_notes_above(None);
        for line in progress.take_new_errors() {
            bar.println(line);
        }
        bar.set_position(progress.finished_before + progress.stats().done);
        bar.abandon_with_message(progress.line());
    }
}

/// Lines waiting to be shown above the bar; `Some` while a bar is on screen.
static NOTES: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// Say `line` on stderr without the progress bar's redraw erasing it (the Ctrl-C
/// acknowledgement): while a bar is shown it is printed above it at the bar's next update.
pub fn say_above_bar(line: impl Into<String>) {
    let line = line.into();
    if let Ok(mut notes) = NOTES.lock() {
        if let Some(pending) = notes.as_mut() {
            pending.push(line);
            return;
        }
    }
    eprintln!("{line}");
}

/// Start (a bar is shown) or stop (it is gone) queueing [`say_above_bar`]'s lines.
fn show_notes_above(bar: Option<&ProgressBar>) {
    if let Ok(mut notes) = NOTES.lock() {
        *notes = bar.map(|_| Vec::new());
    }
}

fn take_notes() -> Vec<String> {
    NOTES
        .lock()
        .ok()
        .and_then(|mut notes| notes.as_mut().map(std::mem::take))
        .unwrap_or_default()
}

/// Shows the first errors that came in after the last plain line when the reporter is aborted.
struct ErrorsOnDrop(Arc<Progress>);

impl Drop for ErrorsOnDrop {
    fn drop(&mut self) {
        for line in self.0.take_new_errors() {
            eprintln!("{line}");
        }
    }
}

/// `in flight N/LIMIT`, never more than the limit: when the limit was lowered (AIMD backing off)
/// requests started under the old one are still finishing, and are shown as such.
fn in_flight(in_flight: usize, limit: usize) -> String {
    if in_flight > limit {
        format!(
            "in flight {limit}/{limit} (+{} started before the limit was lowered)",
            in_flight - limit
        )
    } else {
        format!("in flight {in_flight}/{limit}")
    }
}

/// Add a sample, dropping those older than the window (keeping one just before it, so the
/// window stays covered).
fn remember(history: &mut VecDeque<(Instant, u64)>, now: Instant, done: u64) {
    history.push_back((now, done));
    while history.len() > 2 && now.duration_since(history[1].0) >= ETA_WINDOW {
        history.pop_front();
    }
}

/// Time to finish `left` prompts at the rate of the recent history; `None` while there is not
/// enough of it (a short span, or too few prompts ended in it — also when nothing ends any more).
fn eta(history: &VecDeque<(Instant, u64)>, left: u64) -> Option<Duration> {
    let (&(t0, d0), &(t1, d1)) = (history.front()?, history.back()?);
    let span = t1.duration_since(t0);
    let ended = d1.saturating_sub(d0);
    if span < ETA_MIN_SPAN || ended < ETA_MIN_DONE {
        return None;
    }
    let secs = left as f64 * span.as_secs_f64() / ended as f64;
    (secs.is_finite() && secs < 1e9).then(|| Duration::from_secs_f64(secs))
}

/// The journal's snake_case name of a class.
pub fn class_name(class: ErrorClass) -> String {
    serde_json::to_value(class)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{class:?}"))
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=99 => format!("{s}s"),
        100..=5999 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_lines_wait_for_the_bar_while_one_is_shown() {
        let bar = ProgressBar::hidden();
        show_notes_above(Some(&bar));
        say_above_bar("Ctrl-C: no new requests");
        assert_eq!(take_notes(), vec!["Ctrl-C: no new requests".to_string()]);
        assert!(take_notes().is_empty(), "each line is shown once");
        show_notes_above(None);
        say_above_bar("straight to stderr");
        assert!(take_notes().is_empty());
    }

    #[test]
    fn line_shows_counts_rates_money_and_errors() {
        let limiter = Limiter::new(4, 1, 8);
        let budget = Arc::new(Mutex::new(Budget::new(Some(2.0), None, None, 0.5)));
        let p = Progress::new(10, 3, limiter, budget);
        p.attempt(Some(ErrorClass::RateLimited), 0, false);
        p.attempt(None, 120, true);
        let line = p.line();
        assert!(
            line.starts_with("run: 4/10 done, $0.5000/$2.00 | session: 1 done (1 ok, 0 failed)"),
            "{line}"
        );
        assert!(line.contains("in flight 0/4"), "{line}");
        assert!(line.contains("ETA ?"), "{line}");
        assert!(line.contains("errors rate_limited=1"), "{line}");
        assert_eq!(human_duration(Duration::from_secs(7325)), "2h02m");
    }

    #[test]
    fn in_flight_never_exceeds_the_limit() {
        assert_eq!(in_flight(3, 4), "in flight 3/4");
        assert_eq!(
            in_flight(27, 19),
            "in flight 19/19 (+8 started before the limit was lowered)"
        );
    }

    #[test]
    fn eta_follows_the_recent_rate_and_says_when_it_does_not_know() {
        let t = Instant::now();
        let at = |s: u64| t + Duration::from_secs(s);
        let mut h = VecDeque::from([(t, 0)]);
        // Too little history: unknown, not `1s`.
        remember(&mut h, at(1), 10);
        assert_eq!(eta(&h, 1000), None);
        // 100 prompts in the first 10 s.
        remember(&mut h, at(10), 100);
        assert_eq!(eta(&h, 1000), Some(Duration::from_secs(100)));
        // Then the run slows to 1 prompt per 10 s: after the window has moved on, the ETA says so.
        for s in (20..=400).step_by(10) {
            remember(&mut h, at(s), 100 + (s - 10) / 10);
        }
        let e = eta(&h, 100).unwrap();
        assert!(e >= Duration::from_secs(900), "{e:?}");
        // Nothing ends any more: unknown.
        for s in (410..=700).step_by(10) {
            remember(&mut h, at(s), 139);
        }
        assert_eq!(eta(&h, 100), None);
    }

    #[test]
    fn the_first_error_of_each_class_is_shown_once() {
        let p = Progress::new(
            1,
            0,
            Limiter::new(1, 1, 1),
            Arc::new(Mutex::new(Budget::new(None, None, None, 0.0))),
        );
        p.error_seen(ErrorClass::Network, || {
            "connection refused (127.0.0.1:9)".into()
        });
        p.error_seen(ErrorClass::Network, || {
            unreachable!("only the first is kept")
        });
        p.error_seen(ErrorClass::RateLimited, || "HTTP 429: slow down".into());
        assert_eq!(
            p.take_new_errors(),
            vec![
                "first rate_limited error: HTTP 429: slow down".to_string(),
                "first network error: connection refused (127.0.0.1:9)".to_string(),
            ]
        );
        assert!(p.take_new_errors().is_empty());
    }
}
