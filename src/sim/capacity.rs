//! [`Capacity`]: the simulator as a provider with finite capacity — a maximum of requests in flight
//! and a requests-per-second budget (a token bucket holding one second's worth). A request beyond
//! either is answered at once with 429 and `Retry-After`, as OpenRouter and most providers do, so
//! a client's adaptive concurrency can be measured against a known capacity.
//!
//! Hand-written rather than `governor`: the bucket must be refunded nothing and consulted together
//! with the in-flight count under one lock, and what is measured (admitted, turned away, the most
//! in flight) is part of the model.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The capacity of the simulated provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityConfig {
    /// Requests answered at the same time; more are turned away.
    pub max_in_flight: Option<usize>,
    /// Requests admitted per second (bursts up to one second's worth).
    pub rps: Option<f64>,
    /// `Retry-After` seconds sent with a capacity 429.
    pub retry_after_secs: u64,
    /// Advertise the requests-per-second bucket on every answer, as OpenRouter does:
    /// `X-RateLimit-Limit` (the bucket), `-Remaining` (its whole tokens) and `-Reset` (Unix
    /// milliseconds when it is full again). `--capacity-headers`.
    pub headers: bool,
}

impl Default for CapacityConfig {
    fn default() -> Self {
        CapacityConfig {
            max_in_flight: None,
            rps: None,
            retry_after_secs: 1,
            headers: false,
        }
    }
}

/// What the capacity model saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CapacitySnapshot {
    pub admitted: u64,
    pub rejected: u64,
    /// The most requests in flight at once.
    pub peak_in_flight: usize,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The live capacity state of a simulator.
#[derive(Debug)]
pub struct Capacity {
    config: CapacityConfig,
    in_flight: Arc<AtomicUsize>,
    bucket: Mutex<Bucket>,
    admitted: AtomicU64,
    rejected: AtomicU64,
    peak: AtomicUsize,
}

/// A slot of the provider's capacity, given back on drop.
#[derive(Debug)]
pub struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Capacity {
    pub fn new(config: CapacityConfig) -> Capacity {
        Capacity {
            config,
            in_flight: Arc::new(AtomicUsize::new(0)),
            bucket: Mutex::new(Bucket {
                tokens: config.rps.unwrap_or(0.0).max(1.0),
                at: Instant::now(),
            }),
            admitted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    pub fn retry_after_secs(&self) -> u64 {
        self.config.retry_after_secs
    }

    /// Admit one request, or `None`: turned away (answer 429).
    pub fn admit(&self) -> Option<Slot> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Option<Slot> {
        let Ok(mut bucket) = self.bucket.lock() else {
            return None;
        };
        let in_flight = self.in_flight.load(Ordering::Acquire);
        let room = self.config.max_in_flight.is_none_or(|max| in_flight < max);
        if let Some(rps) = self.config.rps {
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * rps).min(rps.max(1.0));
            bucket.at = now;
        }
        let has_token = self.config.rps.is_none() || bucket.tokens >= 1.0;
        if !(room && has_token) {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if self.config.rps.is_some() {
            bucket.tokens -= 1.0;
        }
        let now_in_flight = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now_in_flight, Ordering::Relaxed);
        self.admitted.fetch_add(1, Ordering::Relaxed);
        Some(Slot(self.in_flight.clone()))
    }

    /// The `X-RateLimit-*` headers of an answer given now (with `headers` and a bucket).
    pub fn advertised(&self) -> Option<[(&'static str, String); 3]> {
        let rps = self.config.rps.filter(|_| self.config.headers)?;
        let bucket = self.bucket.lock().ok()?;
        let limit = rps.max(1.0);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        let remaining = (bucket.tokens + elapsed * rps).min(limit).floor();
        // When the requests used (`limit - remaining`) are back: a client reads the rate as
        // used over the time to the reset.
        let full_in = Duration::from_secs_f64(((limit - remaining) / rps).max(0.0));
        let unix_ms = (SystemTime::now() + full_in)
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Some([
            ("x-ratelimit-limit", format!("{}", limit.floor())),
            ("x-ratelimit-remaining", format!("{remaining}")),
            ("x-ratelimit-reset", unix_ms.to_string()),
        ])
    }

    pub fn snapshot(&self) -> CapacitySnapshot {
        CapacitySnapshot {
            admitted: self.admitted.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            peak_in_flight: self.peak.load(Ordering::Relaxed),
        }
    }
}

/// Most requests per second the capacity sustains with answers taking `latency`.
pub fn sustainable_rps(config: &CapacityConfig, latency: Duration) -> Option<f64> {
    let by_slots = config
        .max_in_flight
        .map(|n| n as f64 / latency.as_secs_f64().max(1e-6));
    match (by_slots, config.rps) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_away_beyond_the_slots_and_the_bucket() {
        let c = Capacity::new(CapacityConfig {
            max_in_flight: Some(2),
            ..CapacityConfig::default()
        });
        let a = c.admit().expect("first");
        let _b = c.admit().expect("second");
        assert!(c.admit().is_none(), "no third slot");
        drop(a);
        assert!(c.admit().is_some(), "a slot came back");
        assert_eq!(
            c.snapshot(),
            CapacitySnapshot {
                admitted: 3,
                rejected: 1,
                peak_in_flight: 2
            }
        );

        let c = Capacity::new(CapacityConfig {
            rps: Some(10.0),
            ..CapacityConfig::default()
        });
        let t0 = Instant::now();
        let admitted = (0..20).filter_map(|_| c.admit_at(t0)).count();
        assert_eq!(admitted, 10, "one second's worth at once");
        let later = t0 + Duration::from_millis(500);
        let admitted = (0..20).filter_map(|_| c.admit_at(later)).count();
        assert_eq!(admitted, 5, "refilled at 10/s");
        assert_eq!(
            sustainable_rps(
                &CapacityConfig {
                    max_in_flight: Some(20),
                    rps: Some(50.0),
                    retry_after_secs: 1,
                    headers: false,
                },
                Duration::from_millis(200)
            ),
            Some(50.0)
        );
    }
}
