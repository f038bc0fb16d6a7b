//! [`Budget`]: what the run has spent, what in-flight requests may still cost, and whether the next
//! request fits under `max_cost_usd`.
//!
//! The cost of an attempt is the server's `usage.cost` (OpenRouter) or, failing that, the price
//! table applied to `usage` tokens. Before a request is scheduled its cost is estimated — the mean
//! observed cost once a few requests have finished, before that the price table applied to the
//! prompt's size (about four characters a token) and `max_tokens` — and reserved; the reservation
//! is replaced by the real cost when the attempt ends. Scheduling stops when spent + reserved +
//! the next estimate would exceed the cap, so the run ends at most one estimate's error over it.
//! Without a price table the first requests are estimated at zero until costs are observed: set one
//! for a tight cap on expensive models.

use serde_json::Value;

use crate::api::{ResponseFacts, UsageNumbers};
use crate::config::BudgetConfig;
use crate::dataset::Prompt;

/// Completion tokens assumed when `max_tokens` is not set.
const DEFAULT_COMPLETION_ESTIMATE: u64 = 1024;
/// Observed costs needed before the mean replaces the price-table estimate.
const MIN_OBSERVATIONS: u64 = 3;

/// Dollars per token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriceTable {
    pub prompt: f64,
    pub completion: f64,
}

impl PriceTable {
    pub fn from_config(c: &BudgetConfig) -> Option<PriceTable> {
        if c.prompt_usd_per_mtok.is_none() && c.completion_usd_per_mtok.is_none() {
            return None;
        }
        Some(PriceTable {
            prompt: c.prompt_usd_per_mtok.unwrap_or(0.0) / 1e6,
            completion: c.completion_usd_per_mtok.unwrap_or(0.0) / 1e6,
        })
    }
}

/// The cost of one response: `usage.cost`, else the price table over `usage` tokens.
pub fn cost_of(response: &Value, prices: Option<&PriceTable>) -> Option<f64> {
    cost_of_usage(&ResponseFacts::of_value(response).usage, prices)
}

/// [`cost_of`] from the usage numbers already read from a response.
pub fn cost_of_usage(usage: &UsageNumbers, prices: Option<&PriceTable>) -> Option<f64> {
    if let Some(cost) = usage.cost {
        return Some(cost);
    }
    let prices = prices?;
    let prompt = usage.prompt_tokens?;
    let completion = usage.completion_tokens.unwrap_or(0);
    Some(prompt as f64 * prices.prompt + completion as f64 * prices.completion)
}

/// Rough prompt size in tokens: serialized messages and tools, four characters a token.
pub fn prompt_tokens_estimate(prompt: &Prompt) -> u64 {
    let chars = serde_json::to_string(&prompt.messages).map_or(0, |s| s.len())
        + prompt
            .tools
            .as_ref()
            .and_then(|t| serde_json::to_string(t).ok())
            .map_or(0, |s| s.len());
    (chars as u64).div_ceil(4)
}

/// The run's spending account.
#[derive(Debug, Clone)]
pub struct Budget {
    max: Option<f64>,
    prices: Option<PriceTable>,
    max_tokens: Option<u32>,
    spent: f64,
    reserved: f64,
    observed_sum: f64,
    observed_n: u64,
}

impl Budget {
    /// `spent` is what earlier sessions of the run already cost.
    pub fn new(
        max: Option<f64>,
        prices: Option<PriceTable>,
        max_tokens: Option<u32>,
        spent: f64,
    ) -> Budget {
        Budget {
            max,
            prices,
            max_tokens,
            spent,
            reserved: 0.0,
            observed_sum: 0.0,
            observed_n: 0,
        }
    }

    pub fn max(&self) -> Option<f64> {
        self.max
    }

    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// Mean cost of a finished attempt that reported one, if any have.
    pub fn observed_mean(&self) -> Option<f64> {
        (self.observed_n > 0).then(|| self.observed_sum / self.observed_n as f64)
    }

    /// The expected cost of one request for `prompt`.
    pub fn estimate(&self, prompt: &Prompt) -> f64 {
        self.estimate_tokens(prompt_tokens_estimate(prompt))
    }

    /// [`Budget::estimate`] of a prompt of `prompt_tokens` (its [`prompt_tokens_estimate`]).
    pub fn estimate_tokens(&self, prompt_tokens: u64) -> f64 {
        if self.observed_n >= MIN_OBSERVATIONS {
            return self.observed_sum / self.observed_n as f64;
        }
        match (&self.prices, self.observed_mean()) {
            (Some(p), observed) => {
                let completion = self
                    .max_tokens
                    .map_or(DEFAULT_COMPLETION_ESTIMATE, u64::from);
                let table = prompt_tokens as f64 * p.prompt + completion as f64 * p.completion;
                observed.map_or(table, |o| o.max(table))
            }
            (None, observed) => observed.unwrap_or(0.0),
        }
    }

    /// Projected cost of `prompts`, if anything is known to project from.
    pub fn project<'a>(&self, prompts: impl Iterator<Item = &'a Prompt>) -> Option<f64> {
        if self.prices.is_none() && self.observed_n == 0 {
            return None;
        }
        Some(prompts.map(|p| self.estimate(p)).sum())
    }

    /// [`Budget::project`] from each prompt's [`prompt_tokens_estimate`].
    pub fn project_tokens(&self, prompt_tokens: impl Iterator<Item = u64>) -> Option<f64> {
        if self.prices.is_none() && self.observed_n == 0 {
            return None;
        }
        Some(prompt_tokens.map(|t| self.estimate_tokens(t)).sum())
    }

    /// Reserve `estimate` for a request about to start; `false` if it would break the cap.
    pub fn try_reserve(&mut self, estimate: f64) -> bool {
        if let Some(max) = self.max {
            if self.spent + self.reserved + estimate > max || self.spent >= max {
                return false;
            }
        }
        self.reserved += estimate;
        true
    }

    /// An attempt ended: release its reservation and book what it cost.
    pub fn settle(&mut self, estimate: f64, cost: Option<f64>) {
        self.reserved = (self.reserved - estimate).max(0.0);
        if let Some(cost) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            self.spent += cost;
            self.observed_sum += cost;
            self.observed_n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(text: &str) -> Prompt {
        Prompt {
            id: "p".into(),
            source: "t".into(),
            messages: vec![json!({"role": "user", "content": text})],
            tools: None,
            meta: Value::Null,
        }
    }

    #[test]
    fn cost_prefers_usage_cost_then_price_table() {
        let prices = PriceTable {
            prompt: 1e-6,
            completion: 2e-6,
        };
        let r = json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.5}});
        assert_eq!(cost_of(&r, Some(&prices)), Some(0.5));
        let r = json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5}});
        let cost = cost_of(&r, Some(&prices)).unwrap();
        assert!((cost - 20e-6).abs() < 1e-15, "{cost}");
        assert_eq!(cost_of(&r, None), None);
        assert_eq!(cost_of(&json!({}), Some(&prices)), None);
    }

    #[test]
    fn reservations_stop_at_the_cap_and_settle_to_real_costs() {
        let mut b = Budget::new(Some(1.0), None, Some(100), 0.25);
        assert!(b.try_reserve(0.5));
        assert!(!b.try_reserve(0.5), "0.25 + 0.5 + 0.5 > 1");
        b.settle(0.5, Some(0.1));
        assert!((b.spent() - 0.35).abs() < 1e-12);
        assert!(b.try_reserve(0.5));
        for _ in 0..3 {
            b.settle(0.0, Some(0.2));
        }
        // Mean of observed costs (0.1, 0.2, 0.2, 0.2) now drives the estimate.
        assert!((b.estimate(&prompt("x")) - 0.175).abs() < 1e-12);
    }

    #[test]
    fn estimate_uses_the_price_table_before_observations() {
        let b = Budget::new(
            None,
            Some(PriceTable {
                prompt: 1.0,
                completion: 0.0,
            }),
            Some(10),
            0.0,
        );
        let p = prompt("abcd");
        assert_eq!(b.estimate(&p), prompt_tokens_estimate(&p) as f64);
        assert!(b.project([&p, &p].into_iter()).unwrap() > 0.0);
        assert_eq!(
            Budget::new(None, None, None, 0.0).project([&p].into_iter()),
            None
        );
    }
}
