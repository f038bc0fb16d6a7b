//! Every setting checked once, before a run starts; the error names the key and what to do.

use std::collections::HashSet;

use super::{invalid, ConfigError, EndpointConfig, RunConfig, MAX_CONCURRENCY_CEILING};

impl RunConfig {
    /// Check every setting; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_endpoints()?;
        self.validate_concurrency()?;
        self.validate_timeouts_and_retry()?;
        self.validate_budget()?;
        if self.max_answer_mb == Some(0) {
            return Err(invalid("max_answer_mb", "must be at least 1 (MB)"));
        }
        non_negative_seconds("grace_s", self.grace_s)
    }

    fn validate_endpoints(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() {
            return Err(invalid(
                "endpoints",
                "no endpoint: pass --base-url or add an [[endpoints]] table to the config",
            ));
        }
        let mut names = HashSet::new();
        for (i, e) in self.endpoints.iter().enumerate() {
            let key = format!("endpoints[{i}]");
            if e.name.trim().is_empty() {
                return Err(invalid(format!("{key}.name"), "must not be empty"));
            }
            if !names.insert(e.name.as_str()) {
                return Err(invalid(
                    format!("{key}.name"),
                    format!(
                        "{:?} is used by two endpoints; names must be unique",
                        e.name
                    ),
                ));
            }
            self.validate_endpoint(&key, e)?;
        }
        Ok(())
    }

    /// One `[[endpoints]]` table past its name (`key`: `endpoints[i]`), with the request options
    /// as its kind of server would get them.
    fn validate_endpoint(&self, key: &str, e: &EndpointConfig) -> Result<(), ConfigError> {
        if !(e.base_url.starts_with("http://") || e.base_url.starts_with("https://")) {
            return Err(invalid(
                format!("{key}.base_url"),
                format!(
                    "{:?} is not an http(s) URL (expected e.g. https://openrouter.ai/api/v1)",
                    e.base_url
                ),
            ));
        }
        let trimmed = e.base_url.trim_end_matches('/');
        if let Some(base) = trimmed.strip_suffix("/chat/completions") {
            return Err(invalid(
                format!("{key}.base_url"),
                format!(
                    "{:?} ends with /chat/completions, which draftgen adds itself: use {base}",
                    e.base_url
                ),
            ));
        }
        if e.weight == 0 {
            return Err(invalid(format!("{key}.weight"), "must be at least 1"));
        }
        let mut opts = self.request.clone();
        opts.server_kind = e.kind;
        opts.validate().map_err(|err| {
            invalid(
                format!("request (for endpoint {:?})", e.name),
                err.to_string(),
            )
        })
    }

    fn validate_concurrency(&self) -> Result<(), ConfigError> {
        let c = &self.concurrency;
        if c.min == 0 {
            return Err(invalid("concurrency.min", "must be at least 1"));
        }
        if c.max > MAX_CONCURRENCY_CEILING {
            return Err(invalid(
                "concurrency.max",
                format!(
                    "{} is above the supported ceiling {MAX_CONCURRENCY_CEILING}",
                    c.max
                ),
            ));
        }
        if c.min > c.max {
            return Err(invalid(
                "concurrency.min",
                format!("{} is above concurrency.max {}", c.min, c.max),
            ));
        }
        if c.initial < c.min || c.initial > c.max {
            return Err(invalid(
                "concurrency.initial",
                format!(
                    "{} must be between min {} and max {}",
                    c.initial, c.min, c.max
                ),
            ));
        }
        if c.requests_per_minute == Some(0) {
            return Err(invalid(
                "concurrency.requests_per_minute",
                "must be at least 1 (omit it for no limit)",
            ));
        }
        Ok(())
    }

    fn validate_timeouts_and_retry(&self) -> Result<(), ConfigError> {
        let t = &self.timeouts;
        for (name, v) in [
            ("timeouts.connect_s", t.connect_s),
            ("timeouts.first_byte_s", t.first_byte_s),
            ("timeouts.idle_s", t.idle_s),
            ("timeouts.total_s", t.total_s),
        ] {
            if !(v.is_finite() && v > 0.0 && v < 1e7) {
                return Err(invalid(
                    name,
                    format!("{v} must be a positive number of seconds"),
                ));
            }
        }
        if self.retry.max_attempts == 0 {
            return Err(invalid("retry.max_attempts", "must be at least 1"));
        }
        non_negative_seconds("retry.cap_s", self.retry.cap_s)
    }

    fn validate_budget(&self) -> Result<(), ConfigError> {
        let b = &self.budget;
        for (name, v) in [
            ("budget.max_cost_usd", b.max_cost_usd),
            ("budget.prompt_usd_per_mtok", b.prompt_usd_per_mtok),
            ("budget.completion_usd_per_mtok", b.completion_usd_per_mtok),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(invalid(name, format!("{v} must be a non-negative amount")));
                }
            }
        }
        Ok(())
    }
}

/// A duration setting that may be zero: finite, not negative, and below 10^7 s.
fn non_negative_seconds(key: &str, seconds: f64) -> Result<(), ConfigError> {
    if (0.0..1e7).contains(&seconds) {
        Ok(())
    } else {
        Err(invalid(key, "must be a non-negative number of seconds"))
    }
}
