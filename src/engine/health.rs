//! [`Health`]: whether the run's endpoints work at all, and the first error of each class.
//!
//! A run pointed at a port where nothing listens, a wrong base URL or a rejected key fails every
//! attempt in milliseconds; without a check it makes thousands of attempts and ends with nothing
//! but a count. So: while **no attempt of this session has succeeded**, every endpoint's
//! consecutive failures that say "this endpoint cannot work" — it cannot be reached (a network
//! error with no HTTP answer) or it answers 401, 403 or 404 — are counted, and once every endpoint
//! has [`DEAD_AFTER`] of them in a row the run stops (exit 1; the prompts stay pending, so the same
//! command resumes once the endpoint is fixed). One success anywhere disables the check for the
//! rest of the session: a working endpoint that later has trouble is the retry policy's business.
//!
//! The first error text of every class is kept verbatim (keys already scrubbed) for the console
//! and the final message: "network=2312" tells nobody that the port was refused.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::api::{ApiError, ErrorClass};

/// Consecutive "cannot work" failures per endpoint, with no success, that stop the run.
pub const DEAD_AFTER: u32 = 8;

/// What the check saw.
#[derive(Debug, Default)]
struct State {
    /// Per endpoint (index in the pool): consecutive "cannot work" failures.
    dead_streak: Vec<u32>,
    succeeded: bool,
    /// The first "cannot work" error of the session, verbatim.
    first_dead: Option<String>,
    first_by_class: BTreeMap<ErrorClass, String>,
}

/// The endpoints' health in this session.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
}

/// Why the run stopped as hopeless.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreachable {
    pub consecutive: u32,
    pub first_error: String,
}

impl Health {
    pub fn new(endpoints: usize) -> Health {
        Health {
            state: Mutex::new(State {
                dead_streak: vec![0; endpoints.max(1)],
                ..State::default()
            }),
        }
    }

    /// An attempt on endpoint `index` succeeded.
    pub fn success(&self, index: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.succeeded = true;
            if let Some(streak) = s.dead_streak.get_mut(index) {
                *streak = 0;
            }
        }
    }

    /// An attempt on endpoint `index` failed with `err` (whose message is already scrubbed of
    /// keys, as `message`). Returns why the run should stop, once every endpoint looks dead.
    pub fn failure(&self, index: usize, err: &ApiError, message: &str) -> Option<Unreachable> {
        let Ok(mut s) = self.state.lock() else {
            return None;
        };
        s.first_by_class
            .entry(err.class)
            .or_insert_with(|| message.to_string());
        if s.succeeded {
            return None;
        }
        let streak = s.dead_streak.get_mut(index)?;
        if cannot_work(err) {
            *streak += 1;
            if s.first_dead.is_none() {
                s.first_dead = Some(message.to_string());
            }
        } else {
            *streak = 0;
        }
        s.dead_streak
            .iter()
            .all(|&n| n >= DEAD_AFTER)
            .then(|| Unreachable {
                consecutive: DEAD_AFTER,
                first_error: s.first_dead.clone().unwrap_or_default(),
            })
    }

    /// The first error message of each class seen this session (keys scrubbed), for display.
    pub fn first_errors(&self) -> BTreeMap<ErrorClass, String> {
        self.state
            .lock()
            .map(|s| s.first_by_class.clone())
            .unwrap_or_default()
    }
}

/// A failure that says the endpoint as configured cannot answer at all: nothing answered over
/// HTTP (refused, DNS, TLS, reset before a status line), or a 401 / 403 / 404.
fn cannot_work(err: &ApiError) -> bool {
    match err.http_status {
        None => err.class == ErrorClass::Network,
        Some(status) => matches!(status, 401 | 403 | 404),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> ApiError {
        ApiError::new(
            ErrorClass::Network,
            "cannot connect to 127.0.0.1:9: Connection refused",
        )
    }

    #[test]
    fn stops_only_when_every_endpoint_is_dead_and_nothing_succeeded() {
        let h = Health::new(2);
        for _ in 0..DEAD_AFTER * 2 {
            assert_eq!(h.failure(0, &refused(), "refused"), None);
        }
        let not_found = ApiError::new(ErrorClass::ClientError, "HTTP 404").with_status(404);
        for _ in 1..DEAD_AFTER {
            assert_eq!(h.failure(1, &not_found, "HTTP 404"), None);
        }
        let stop = h.failure(1, &not_found, "HTTP 404").expect("both dead");
        assert_eq!(stop.first_error, "refused");
        assert_eq!(
            h.first_errors()
                .get(&ErrorClass::ClientError)
                .map(String::as_str),
            Some("HTTP 404")
        );
    }

    #[test]
    fn a_success_or_an_ordinary_failure_keeps_the_run_going() {
        let h = Health::new(1);
        for _ in 1..DEAD_AFTER {
            h.failure(0, &refused(), "refused");
        }
        let busy = ApiError::new(ErrorClass::RateLimited, "HTTP 429").with_status(429);
        assert_eq!(h.failure(0, &busy, "HTTP 429"), None);
        for _ in 1..DEAD_AFTER {
            assert_eq!(h.failure(0, &refused(), "refused"), None);
        }
        h.success(0);
        for _ in 0..DEAD_AFTER * 3 {
            assert_eq!(h.failure(0, &refused(), "refused"), None);
        }
    }
}
