//! [`Advertised`]: the rate limits an answer's headers advertise — `X-RateLimit-Limit` /
//! `-Remaining` / `-Reset` (OpenRouter and others) or OpenAI's `x-ratelimit-limit-requests` /
//! `-remaining-requests` / `-reset-requests` — read by the transport, used by the engine's pacing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The rate limits an answer advertises: `X-RateLimit-Limit` / `-Remaining` / `-Reset`
/// (OpenRouter and others) or OpenAI's `x-ratelimit-limit-requests` / `-remaining-requests` /
/// `-reset-requests`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Advertised {
    pub limit: Option<f64>,
    pub remaining: Option<f64>,
    /// Time until the limit is whole again.
    pub reset: Option<Duration>,
}

/// How long a cap from advertised limits holds without a newer answer.
const ADVERTISED_HOLDS: Duration = Duration::from_secs(2);
/// The longest reset read as a pace.
const LONGEST_RESET: Duration = Duration::from_secs(60);

impl Advertised {
    /// Read from a response's headers (names in any case); `unix_now`: the time now since the
    /// epoch (a reset may be a Unix timestamp). `None` when no rate-limit header is there.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        unix_now: Duration,
    ) -> Option<Advertised> {
        let mut a = Advertised::default();
        for (name, value) in headers {
            a.read(name, value, unix_now);
        }
        (a != Advertised::default()).then_some(a)
    }

    /// Take one header into `advertised` if it is a rate-limit header (the transport calls this
    /// for every header of an answer, the time now read once per answer).
    pub fn header(advertised: &mut Option<Box<Advertised>>, name: &str, value: &str) {
        if name
            .get(..12)
            .is_some_and(|p| p.eq_ignore_ascii_case("x-ratelimit-"))
        {
            let unix_now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            advertised
                .get_or_insert_with(Box::default)
                .read(name, value, unix_now);
        }
    }

    fn read(&mut self, name: &str, value: &str, unix_now: Duration) {
        let name = name.to_ascii_lowercase();
        let value = value.trim();
        match name.as_str() {
            "x-ratelimit-limit" | "x-ratelimit-limit-requests" => self.limit = value.parse().ok(),
            "x-ratelimit-remaining" | "x-ratelimit-remaining-requests" => {
                self.remaining = value.parse().ok()
            }
            "x-ratelimit-reset" | "x-ratelimit-reset-requests" => {
                self.reset = parse_reset(value, unix_now)
            }
            _ => {}
        }
    }

    /// The rate the limits sustain: the used part of the limit comes back by the reset (a token
    /// bucket refilling `limit - remaining` over `reset`); `None` when they do not say.
    /// A limit over a longer window (a daily quota) is not a pace: `None`, and so is a reset
    /// read wrong (a timestamp taken for seconds would otherwise hold the pace at nothing), and
    /// a bucket less than half used (it does not bind).
    pub fn rate(&self) -> Option<f64> {
        self.rate_since(Duration::ZERO)
    }

    /// [`Advertised::rate`] for limits the server set `age` before they were read: a server
    /// counts a request when it admits it, and its answer (with the headers) comes a latency
    /// later, when the reset is that much nearer — read as is, a reset a few tokens away would
    /// say a rate far above the bucket's.
    pub fn rate_since(&self, age: Duration) -> Option<f64> {
        let (limit, remaining, reset) = (self.limit?, self.remaining?, self.reset?);
        let reset = reset + age;
        let secs = reset.as_secs_f64();
        // Only a bucket at least half used says its rate: a few tokens used come back in a few
        // milliseconds, too few to measure against a latency.
        (secs >= 0.01 && reset <= LONGEST_RESET && remaining <= limit / 2.0)
            .then(|| (limit - remaining) / secs)
    }

    /// How long a cap from these limits holds without a newer answer: briefly, so a wrong one
    /// lapses by itself (every answer brings fresh ones).
    pub fn holds(&self) -> Duration {
        ADVERTISED_HOLDS
    }
}

/// A reset: a duration with units (`1s`, `6m0s`, `20ms`: OpenAI's), a Unix timestamp in
/// milliseconds (OpenRouter's) or seconds, or seconds from now.
fn parse_reset(value: &str, unix_now: Duration) -> Option<Duration> {
    if let Ok(number) = value.parse::<f64>() {
        if !number.is_finite() || number < 0.0 {
            return None;
        }
        let at = if number >= 1e12 {
            Duration::from_secs_f64(number / 1000.0)
        } else if number >= 1e9 {
            Duration::from_secs_f64(number)
        } else {
            return Some(Duration::from_secs_f64(number));
        };
        return Some(at.saturating_sub(unix_now));
    }
    let mut total = 0.0;
    let mut rest = value;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_limits_are_read_in_both_spellings() {
        let unix_now = Duration::from_secs(1_700_000_000);
        // OpenRouter's: the reset a Unix timestamp in milliseconds.
        let openrouter = [
            ("X-RateLimit-Limit", "20"),
            ("X-RateLimit-Remaining", "10"),
            ("X-RateLimit-Reset", "1700000002000"),
        ];
        let a = Advertised::from_headers(openrouter, unix_now).expect("headers");
        assert_eq!(a.reset, Some(Duration::from_secs(2)));
        assert_eq!(a.rate(), Some(5.0), "10 used come back over 2 s");
        // OpenAI's: a duration with units.
        let openai = [
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "440"),
            ("x-ratelimit-reset-requests", "120ms"),
        ];
        let a = Advertised::from_headers(openai, unix_now).expect("headers");
        assert_eq!(a.reset, Some(Duration::from_millis(120)));
        assert_eq!(a.rate(), None, "a bucket hardly used does not bind");
        assert_eq!(
            parse_reset("6m0s", unix_now),
            Some(Duration::from_secs(360))
        );
        assert_eq!(parse_reset("soon", unix_now), None);
        assert_eq!(Advertised::from_headers([("x-other", "1")], unix_now), None);
        // A daily quota, or a timestamp in the past read as seconds, is no pace.
        let daily = [
            ("X-RateLimit-Limit", "50"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1000"),
        ];
        let a = Advertised::from_headers(daily, unix_now).expect("headers");
        assert_eq!(a.rate(), None);
        let mut seen = None;
        Advertised::header(&mut seen, "Content-Type", "application/json");
        assert_eq!(seen, None);
        Advertised::header(&mut seen, "X-RateLimit-Limit", "7");
        assert_eq!(seen.and_then(|a| a.limit), Some(7.0));
    }
}
