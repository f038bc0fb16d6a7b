//! What the simulator has done, readable while it runs (tests assert on these): requests,
//! successes, faults by class, dollars billed. Plain atomics, so the hot path takes no lock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::faults::FaultKind;

/// Dollars are kept in nano-dollars so they fit an atomic integer.
const NANOS_PER_DOLLAR: f64 = 1e9;

#[derive(Debug, Default)]
pub struct Counters {
    requests: AtomicU64,
    answered: AtomicU64,
    faults: [AtomicU64; FaultKind::ALL.len()],
    rejected: AtomicU64,
    spent_nanos: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CounterSnapshot {
    /// `POST /v1/chat/completions` requests received.
    pub requests: u64,
    /// Requests answered normally (no fault, not rejected).
    pub answered: u64,
    /// Injected faults by class (classes that never occurred are absent).
    pub faults: BTreeMap<FaultKind, u64>,
    /// Requests refused before any fault draw (400, 401, 402).
    pub rejected: u64,
    /// Dollars billed (`usage.cost` of answered requests).
    pub spent_usd: f64,
}

impl CounterSnapshot {
    pub fn fault(&self, kind: FaultKind) -> u64 {
        self.faults.get(&kind).copied().unwrap_or(0)
    }

    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }
}

impl Counters {
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn answered(&self, cost: f64) {
        self.answered.fetch_add(1, Ordering::Relaxed);
        self.bill(cost);
    }

    pub fn bill(&self, cost: f64) {
        let nanos = (cost.max(0.0) * NANOS_PER_DOLLAR).round() as u64;
        self.spent_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn fault(&self, kind: FaultKind) {
        self.faults[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn spent_usd(&self) -> f64 {
        self.spent_nanos.load(Ordering::Relaxed) as f64 / NANOS_PER_DOLLAR
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        let faults = FaultKind::ALL
            .iter()
            .map(|k| (*k, self.faults[k.index()].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        CounterSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            answered: self.answered.load(Ordering::Relaxed),
            faults,
            rejected: self.rejected.load(Ordering::Relaxed),
            spent_usd: self.spent_usd(),
        }
    }
}
