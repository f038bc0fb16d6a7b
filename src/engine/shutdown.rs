//! [`Shutdown`]: one signal that every part of a run watches, in the manner of mini-redis.
//!
//! A run stops in two steps. **Stop** (first Ctrl-C, budget reached, fatal 401/402): nothing new is
//! scheduled and no retry starts, while requests already in flight get the grace period to finish
//! and be journaled. **Abort** (second Ctrl-C, or the grace period over): in-flight requests are
//! dropped. Either way the journal writer drains what it was sent and the summary is written;
//! records already appended are safe because each is one `write` of a whole line.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use tokio::sync::watch;

use crate::api::ErrorClass;

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// Every scheduled prompt ran to completion.
    Completed,
    /// Ctrl-C (or the library caller) asked to stop.
    Interrupted,
    /// Scheduling the next request could exceed `max_cost_usd`.
    Budget { max_cost_usd: f64, spent_usd: f64 },
    /// No attempt succeeded and every endpoint kept failing to connect or answered 401/403/404
    /// (`consecutive` times in a row each); `first_error` is the first such failure, verbatim.
    Unreachable {
        consecutive: u32,
        first_error: String,
    },
    /// The endpoint refused the key (401) or the account has no credit (402).
    Fatal {
        class: ErrorClass,
        endpoint: String,
        message: String,
    },
}

impl StopReason {
    /// What the user should read, and do.
    pub fn explain(&self) -> String {
        match self {
            StopReason::Completed => "completed".to_string(),
            StopReason::Interrupted => {
                "interrupted: run the same command again to resume".to_string()
            }
            StopReason::Budget {
                max_cost_usd,
                spent_usd,
            } => format!(
                "budget reached: ${spent_usd:.4} spent of --max-cost-usd ${max_cost_usd:.4}; resume with a larger --max-cost-usd to finish the rest"
            ),
            StopReason::Unreachable {
                consecutive,
                first_error,
            } => format!(
                "stopped early: no request succeeded and every endpoint failed {consecutive} times in a row without a usable answer (cannot connect, or 401/403/404); the first error was: {first_error}\ncheck --base-url, the server and the key, then run the same command again to resume"
            ),
            StopReason::Fatal {
                class: ErrorClass::Unauthorized,
                endpoint,
                message,
            } => format!(
                "endpoint {endpoint:?} rejected the API key (401: {message}); check OPENROUTER_API_KEY / --api-key-file, then resume"
            ),
            StopReason::Fatal {
                class: ErrorClass::ProxyAuth,
                endpoint,
                message,
            } => format!(
                "the proxy refused the requests to endpoint {endpoint:?} ({message}); check the user and password in HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, then resume"
            ),
            StopReason::Fatal {
                class: ErrorClass::PaymentRequired,
                endpoint,
                message,
            } => format!(
                "endpoint {endpoint:?} needs payment (402: {message}); add credits or raise the key's limit, then resume"
            ),
            StopReason::Fatal {
                class,
                endpoint,
                message,
            } => format!("endpoint {endpoint:?} failed fatally ({class:?}: {message})"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Running,
    Stopping,
    Aborting,
}

#[derive(Debug)]
struct Inner {
    phase: watch::Sender<Phase>,
    reason: Mutex<Option<(StopReason, Instant)>>,
}

/// The shared stop signal. Clone it freely; all clones are the same signal.
#[derive(Debug, Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        let (phase, _) = watch::channel(Phase::Running);
        Shutdown {
            inner: Arc::new(Inner {
                phase,
                reason: Mutex::new(None),
            }),
        }
    }

    /// Stop scheduling for `reason`. The first reason wins; later calls only keep the stop.
    pub fn stop(&self, reason: StopReason) {
        if let Ok(mut slot) = self.inner.reason.lock() {
            if slot.is_none() {
                *slot = Some((reason, Instant::now()));
            }
        }
        self.inner.phase.send_if_modified(|p| {
            if *p == Phase::Running {
                *p = Phase::Stopping;
                true
            } else {
                false
            }
        });
    }

    /// Drop in-flight requests now.
    pub fn abort(&self) {
        self.stop(StopReason::Interrupted);
        self.inner.phase.send_if_modified(|p| {
            if *p != Phase::Aborting {
                *p = Phase::Aborting;
                true
            } else {
                false
            }
        });
    }

    /// What Ctrl-C does: the first one stops, the next one aborts.
    pub fn interrupt(&self) {
        if self.is_stopping() {
            self.abort();
        } else {
            self.stop(StopReason::Interrupted);
        }
    }

    pub fn is_stopping(&self) -> bool {
        *self.inner.phase.borrow() >= Phase::Stopping
    }

    pub fn is_aborting(&self) -> bool {
        *self.inner.phase.borrow() >= Phase::Aborting
    }

    /// The reason and when it was given, once stopping.
    pub fn reason(&self) -> Option<(StopReason, Instant)> {
        self.inner.reason.lock().ok().and_then(|r| r.clone())
    }

    /// Resolves once a stop (or abort) has been asked for.
    pub async fn stopping(&self) {
        self.reach(Phase::Stopping).await
    }

    /// Resolves once an abort has been asked for.
    pub async fn aborting(&self) {
        self.reach(Phase::Aborting).await
    }

    async fn reach(&self, phase: Phase) {
        let mut rx = self.inner.phase.subscribe();
        // `wait_for` fails only if the sender is gone, which cannot happen while `self` lives.
        let _ = rx.wait_for(|p| *p >= phase).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_interrupt_stops_second_aborts_and_first_reason_wins() {
        let s = Shutdown::new();
        assert!(!s.is_stopping());
        s.stop(StopReason::Budget {
            max_cost_usd: 1.0,
            spent_usd: 1.0,
        });
        s.interrupt();
        s.stopping().await;
        s.aborting().await;
        assert!(s.is_aborting());
        assert!(matches!(s.reason().unwrap().0, StopReason::Budget { .. }));

        let s = Shutdown::new();
        s.interrupt();
        assert!(s.is_stopping() && !s.is_aborting());
        assert_eq!(s.reason().unwrap().0, StopReason::Interrupted);
        s.interrupt();
        assert!(s.is_aborting());
    }
}
