//! Every attempt of a run over time, for the report's cost, throughput and error plots.
//!
//! Attempts are counted per minute of their start time (`started_at`); a run of days has a few
//! thousand minutes, so memory is bounded by the run's duration, not by its size. The report
//! regroups the minutes into at most a few dozen bars.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::journal::{Record, Status};

/// What the attempts that started in one minute did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Minute {
    pub attempts: u64,
    pub successes: u64,
    pub cost_usd: f64,
    pub completion_tokens: u64,
    /// Failed attempts by error class (`rate_limited`, `timeout`, …).
    pub errors: BTreeMap<String, u64>,
}

/// All attempts, per minute (Unix minutes), plus attempts with an unreadable start time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub minutes: BTreeMap<i64, Minute>,
    pub attempts: u64,
    pub failed: u64,
    pub cost_usd: f64,
    pub errors: BTreeMap<String, u64>,
}

impl Timeline {
    pub fn add(&mut self, record: &Record) {
        self.attempts += 1;
        let cost = record.cost_usd.unwrap_or(0.0);
        self.cost_usd += cost;
        let class = record
            .error_class
            .and_then(|c| serde_json::to_value(c).ok())
            .and_then(|v| v.as_str().map(str::to_string));
        if record.status == Status::Failed {
            self.failed += 1;
            *self
                .errors
                .entry(class.clone().unwrap_or_else(|| "unknown".into()))
                .or_default() += 1;
        }
        let Ok(started) = chrono::DateTime::parse_from_rfc3339(&record.started_at) else {
            return;
        };
        let minute = self
            .minutes
            .entry(started.timestamp().div_euclid(60))
            .or_default();
        minute.attempts += 1;
        minute.cost_usd += cost;
        match record.status {
            Status::Success => {
                minute.successes += 1;
                minute.completion_tokens += record
                    .response
                    .as_ref()
                    .and_then(|r| r.pointer("/usage/completion_tokens"))
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0);
            }
            Status::Failed => {
                *minute
                    .errors
                    .entry(class.unwrap_or_else(|| "unknown".into()))
                    .or_default() += 1;
            }
            Status::Skipped => {}
        }
    }
}
