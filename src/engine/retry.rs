//! When to try a failed request again: exponential backoff with full jitter, never sooner than the
//! server's `Retry-After`.
//!
//! Full jitter (a uniform delay in `0..=min(cap, base·2^(n-1))`) spreads thousands of clients that
//! failed together, so they do not come back together. `Retry-After` is a floor, not a suggestion:
//! a request retried early is rejected again and counts against the account.

use std::time::Duration;

use rand::Rng;

use crate::api::ErrorClass;
use crate::config::RetryConfig;

/// How long after a `Retry-After` the retries it sent back are spread over (at least).
pub const SPREAD: Duration = Duration::from_secs(1);

/// The retry policy of a run.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts per prompt within one session.
    pub max_attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl From<&RetryConfig> for RetryPolicy {
    fn from(c: &RetryConfig) -> Self {
        RetryPolicy {
            max_attempts: c.max_attempts,
            base: Duration::from_millis(c.base_ms),
            cap: Duration::from_secs_f64(c.cap_s),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after this delay.
    RetryAfter(Duration),
    /// A transient failure, but this session's attempts are used up (a resume retries it).
    GiveUp,
    /// A permanent failure: the prompt is finished with this class.
    Permanent,
    /// The whole run must stop (401, 402).
    StopRun,
}

impl RetryPolicy {
    /// Decide after the `n`-th attempt of this session (1-based) failed with `class`.
    pub fn next(&self, class: ErrorClass, n: u32, retry_after: Option<Duration>) -> Next {
        if is_fatal(class) {
            return Next::StopRun;
        }
        // An answer over the limits may be a fluke of one provider: one more try, then failed.
        if class == ErrorClass::OverLimit && n < self.max_attempts.min(2) {
            return Next::RetryAfter(self.delay(n, retry_after, &mut rand::rng()));
        }
        if !class.is_transient() {
            return Next::Permanent;
        }
        if n >= self.max_attempts {
            return Next::GiveUp;
        }
        Next::RetryAfter(self.delay(n, retry_after, &mut rand::rng()))
    }

    /// Full-jitter backoff for the `n`-th failure, floored at `retry_after`.
    pub fn delay(&self, n: u32, retry_after: Option<Duration>, rng: &mut impl Rng) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX));
        let ceiling = exp.min(self.cap);
        let jittered = Duration::from_secs_f64(rng.random::<f64>() * ceiling.as_secs_f64());
        match retry_after {
            // Everyone told "1 s" at once must not come back at 1.00 s together and be turned away
            // together: spread over the second after what the server said (a provider's bucket
            // refills over a second), or over half the wait again for a longer one.
            Some(floor) => {
                let spread = SPREAD.max(floor / 2).mul_f64(rng.random::<f64>());
                jittered.max(floor + spread)
            }
            None => jittered,
        }
    }
}

/// Failures that are about the account, not the prompt: the run stops, and the prompt is retried
/// on resume (the journal calls these classes permanent; the scheduler does not).
pub fn is_fatal(class: ErrorClass) -> bool {
    matches!(
        class,
        ErrorClass::Unauthorized | ErrorClass::PaymentRequired | ErrorClass::ProxyAuth
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        }
    }

    #[test]
    fn classes_decide_retry_permanent_or_stop() {
        let p = policy();
        assert!(matches!(
            p.next(ErrorClass::RateLimited, 1, None),
            Next::RetryAfter(_)
        ));
        assert_eq!(p.next(ErrorClass::RateLimited, 4, None), Next::GiveUp);
        assert_eq!(p.next(ErrorClass::BadRequest, 1, None), Next::Permanent);
        assert_eq!(p.next(ErrorClass::Forbidden, 1, None), Next::Permanent);
        assert_eq!(p.next(ErrorClass::Unauthorized, 1, None), Next::StopRun);
        assert_eq!(p.next(ErrorClass::PaymentRequired, 1, None), Next::StopRun);
        assert!(matches!(
            p.next(ErrorClass::OverLimit, 1, None),
            Next::RetryAfter(_)
        ));
        assert_eq!(p.next(ErrorClass::OverLimit, 2, None), Next::Permanent);
    }

    #[test]
    fn delay_is_jittered_under_the_cap_and_never_below_retry_after() {
        let p = policy();
        let mut rng = rand::rng();
        for n in 1..40 {
            let d = p.delay(n, None, &mut rng);
            let bound = Duration::from_millis(100 * (1u64 << (n - 1).min(20))).min(p.cap);
            assert!(d <= bound, "n={n} d={d:?}");
            let ra = Duration::from_secs(3);
            assert!(p.delay(n, Some(ra), &mut rng) >= ra);
            let one = Duration::from_secs(1);
            let d = p.delay(n, Some(one), &mut rng);
            assert!(d >= one && d <= one + SPREAD, "n={n} d={d:?}");
        }
    }
}
