//! [`Limiter`]: how many requests may be in flight, adapted to what the server tolerates (AIMD).
//!
//! A semaphore whose permit count follows the limit. Additive increase: after `limit` successes
//! in a row of the window the limit grows by one (about one step per round trip of the whole
//! window, as TCP does). Multiplicative decrease: a 429 or 503 halves it, never below `min`, and at
//! most once per [`DECREASE_COOLDOWN`] so one burst of rejections (all the requests that were
//! already in flight when the server got overloaded) counts as one signal. The limit never exceeds
//! `max`.
//!
//! Shrinking a semaphore cannot take back permits that are held: the ones not available right now
//! become a debt, paid by forgetting permits as they are returned.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Minimum time between two decreases.
pub const DECREASE_COOLDOWN: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Window {
    limit: usize,
    successes: usize,
    last_decrease: Option<Instant>,
}

/// The adaptive in-flight limit.
#[derive(Debug)]
pub struct Limiter {
    semaphore: Arc<Semaphore>,
    window: Mutex<Window>,
    /// Permits to forget when returned (a decrease that could not take them at once).
    debt: AtomicUsize,
    in_flight: AtomicUsize,
    min: usize,
    max: usize,
}

/// One slot of in-flight work; returning it (drop) frees the slot or pays the debt.
#[derive(Debug)]
pub struct Permit {
    permit: Option<OwnedSemaphorePermit>,
    limiter: Arc<Limiter>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limiter.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(permit) = self.permit.take() {
            let paid = self
                .limiter
                .debt
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1))
                .is_ok();
            if paid {
                permit.forget();
            }
        }
    }
}

impl Limiter {
    pub fn new(initial: usize, min: usize, max: usize) -> Arc<Limiter> {
        let min = min.max(1);
        let max = max.max(min);
        let initial = initial.clamp(min, max);
        Arc::new(Limiter {
            semaphore: Arc::new(Semaphore::new(initial)),
            window: Mutex::new(Window {
                limit: initial,
                successes: 0,
                last_decrease: None,
            }),
            debt: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            min,
            max,
        })
    }

    /// Wait for a free slot.
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        // The semaphore is never closed, so acquiring cannot fail; if it ever did, running one
        // request without a permit is harmless.
        let permit = self.semaphore.clone().acquire_owned().await.ok();
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        Permit {
            permit,
            limiter: self.clone(),
        }
    }

    /// The current limit.
    pub fn limit(&self) -> usize {
        self.window.lock().map_or(self.min, |w| w.limit)
    }

    /// Requests holding a slot now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// A request succeeded: grow by one after a full window of successes.
    pub fn on_success(&self) {
        let Ok(mut w) = self.window.lock() else {
            return;
        };
        w.successes += 1;
        if w.successes >= w.limit && w.limit < self.max {
            w.successes = 0;
            w.limit += 1;
            // Cancel debt first; only then hand out a new permit.
            let cancelled = self
                .debt
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1))
                .is_ok();
            if !cancelled {
                self.semaphore.add_permits(1);
            }
        }
    }

    /// The server is overloaded (429, 503): halve, at most once per cooldown.
    pub fn on_overload(&self) {
        self.on_overload_at(Instant::now());
    }

    fn on_overload_at(&self, now: Instant) {
        let Ok(mut w) = self.window.lock() else {
            return;
        };
        if w.last_decrease
            .is_some_and(|t| now.saturating_duration_since(t) < DECREASE_COOLDOWN)
        {
            return;
        }
        w.last_decrease = Some(now);
        w.successes = 0;
        let new = (w.limit / 2).max(self.min);
        let cut = w.limit - new;
        w.limit = new;
        if cut > 0 {
            let taken = self.semaphore.forget_permits(cut);
            self.debt.fetch_add(cut - taken, Ordering::AcqRel);
        }
    }

    /// Permits that could be acquired right now (for tests and diagnostics).
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn decrease_halves_with_floor_and_debt_is_paid_on_release() {
        let l = Limiter::new(8, 2, 16);
        let held: Vec<_> = futures_util::future::join_all((0..8).map(|_| l.acquire())).await;
        assert_eq!(l.in_flight(), 8);
        l.on_overload();
        assert_eq!(l.limit(), 4);
        // A second signal inside the cooldown is the same overload.
        l.on_overload();
        assert_eq!(l.limit(), 4);
        drop(held);
        // Four returned permits paid the debt; four are free.
        assert_eq!(l.available(), 4);
        assert_eq!(l.in_flight(), 0);

        let later = Instant::now() + DECREASE_COOLDOWN * 2;
        l.on_overload_at(later);
        assert_eq!(l.limit(), 2);
        l.on_overload_at(later + DECREASE_COOLDOWN * 2);
        assert_eq!(l.limit(), 2, "never below min");
        assert_eq!(l.available(), 2);
    }

    #[tokio::test]
    async fn increase_is_additive_and_capped() {
        let l = Limiter::new(2, 1, 3);
        for _ in 0..2 {
            l.on_success();
        }
        assert_eq!(l.limit(), 3);
        assert_eq!(l.available(), 3);
        for _ in 0..100 {
            l.on_success();
        }
        assert_eq!(l.limit(), 3, "never above max");
        assert_eq!(l.available(), 3);
    }
}
