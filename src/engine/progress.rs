//! Progress: counters the request tasks update, shown as an indicatif bar on a terminal, as plain
//! periodic log lines otherwise, or not at all.
//!
//! One line says everything an operator watching a days-long run needs: prompts done of total, request and
//! output-token rates, dollars spent, ETA, in-flight against the current concurrency limit, and
//! errors by class.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::concurrency::Limiter;
use crate::journal::ErrorClass;

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

/// The live progress of a run.
#[derive(Debug)]
pub struct Progress {
    stats: Mutex<Stats>,
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
        Progress {
            stats: Mutex::new(Stats::default()),
            started: Instant::now(),
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

    pub fn stats(&self) -> Stats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The one-line status.
    pub fn line(&self) -> String {
        let s = self.stats();
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-3);
        let done = self.finished_before + s.done;
        let rate = s.attempts as f64 / elapsed;
        let tok_rate = s.completion_tokens as f64 / elapsed;
        let (spent, max) = self
            .budget
            .lock()
            .map(|b| (b.spent(), b.max()))
            .unwrap_or((0.0, None));
        let prompt_rate = s.done as f64 / elapsed;
        let left = self.total.saturating_sub(done);
        let eta = if left == 0 {
            "0s".to_string()
        } else if prompt_rate > 0.0 {
            human_duration(Duration::from_secs_f64(left as f64 / prompt_rate))
        } else {
            "?".to_string()
        };
        let money = match max {
            Some(max) => format!("${spent:.4}/${max:.2}"),
            None => format!("${spent:.4}"),
        };
        let mut line = format!(
            "{done}/{} done ({} ok, {} failed) | {rate:.1} req/s | {tok_rate:.0} tok/s | {money} | ETA {eta} | in flight {}/{}",
            self.total,
            s.succeeded,
            s.failed,
            self.limiter.in_flight(),
            self.limiter.limit(),
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
                loop {
                    bar.set_position(self.finished_before + self.stats().done);
                    bar.set_message(self.line());
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            ProgressMode::Plain => loop {
                tokio::time::sleep(plain_every).await;
                eprintln!("progress: {}", self.line());
            },
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
        bar.set_position(progress.finished_before + progress.stats().done);
        bar.abandon_with_message(progress.line());
    }
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
    fn line_shows_counts_rates_money_and_errors() {
        let limiter = Limiter::new(4, 1, 8);
        let budget = Arc::new(Mutex::new(Budget::new(Some(2.0), None, None, 0.5)));
        let p = Progress::new(10, 3, limiter, budget);
        p.attempt(Some(ErrorClass::RateLimited), 0, false);
        p.attempt(None, 120, true);
        let line = p.line();
        assert!(line.starts_with("4/10 done (1 ok, 0 failed)"), "{line}");
        assert!(line.contains("$0.5000/$2.00"), "{line}");
        assert!(line.contains("in flight 0/4"), "{line}");
        assert!(line.contains("errors rate_limited=1"), "{line}");
        assert_eq!(human_duration(Duration::from_secs(7325)), "2h02m");
    }
}
