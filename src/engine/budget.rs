//! [`Budget`]: what the run has spent, what in-flight requests may still cost, and whether the next
//! request fits under `max_cost_usd` — the run's cap, over all its sessions.
//!
//! The cost of an attempt is the server's `usage.cost` (OpenRouter) or, failing that, the price
//! table applied to `usage` tokens. Before a request starts, an upper bound of its cost is
//! reserved, and the reservation is replaced by the real cost when the attempt ends: the bound is
//! the price table (configured, or the model's published price) applied to the prompt's size
//! (about four characters a token) and `max_tokens`, raised to the dearest request the run has
//! seen; without a price, the dearest request the run has seen. The run's own costs come from the
//! journal (every earlier session), so a resume knows them before its first answer. A request
//! starts only if spent + every reservation in flight + its own fits under the cap; otherwise it
//! waits for a request in flight to settle, and when nothing is in flight the run stops. While
//! nothing at all is known (no price, no cost seen yet), one request at a time goes out to learn
//! what a request costs. So requests in flight never cross the cap together; only a request
//! dearer than any bound known could.

use serde_json::Value;

use crate::api::{ResponseFacts, UsageNumbers};
use crate::config::BudgetConfig;
use crate::dataset::Prompt;

/// Completion tokens assumed when `max_tokens` is not set.
const DEFAULT_COMPLETION_ESTIMATE: u64 = 1024;
/// Before any answer has been seen, the expected answer is assumed to use this share of the
/// completion limit (the worst case is every answer reaching it).
const ASSUMED_COMPLETION_SHARE: f64 = 0.25;
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

/// What the run's records so far cost: its own observed cost per request, over all sessions (read
/// from the journal's resume index at start).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostHistory {
    /// Sum of the costs reported.
    pub sum: f64,
    /// Records that reported a cost.
    pub n: u64,
    /// The largest cost of one record.
    pub max: f64,
}

/// What the pending prompts are expected to cost and the most they can, by the price table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Projection {
    pub expected_usd: f64,
    /// Every answer at the completion limit (`None` without a price: nothing bounds an answer).
    pub worst_case_usd: Option<f64>,
    /// What the expected figure rests on, said in words.
    pub basis: String,
}

/// The answer to "may one more request start?".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reservation {
    /// Yes; this much is reserved until the attempt is settled.
    Granted(f64),
    /// Not now: requests in flight hold reservations; ask again when one settles (it may cost
    /// less than reserved, or tell what a request costs).
    Wait,
    /// No: nothing is in flight and the next request could cross the cap. The run stops.
    Full,
}

/// The run's spending account.
#[derive(Debug, Clone)]
pub struct Budget {
    max: Option<f64>,
    prices: Option<PriceTable>,
    max_tokens: Option<u32>,
    spent: f64,
    reserved: f64,
    /// Reservations not yet settled (requests in flight).
    holders: u64,
    observed: CostHistory,
    /// Mean completion tokens of the run's successful answers, and how many there were.
    completions: Option<(f64, u64)>,
    /// A successful answer came without a cost and there is no price table: the endpoint does not
    /// say what it costs (a local server), so the cap cannot be held and does not limit requests.
    costless: bool,
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
            holders: 0,
            observed: CostHistory::default(),
            completions: None,
            costless: false,
        }
    }

    /// Start from the costs the journal already holds (every earlier session of the run).
    pub fn with_history(mut self, history: CostHistory) -> Budget {
        self.observed = history;
        self
    }

    /// The run's answers so far: `answers` successful ones with `completion_tokens` in total.
    pub fn with_completions(mut self, completion_tokens: u64, answers: u64) -> Budget {
        self.completions =
            (answers > 0).then(|| (completion_tokens as f64 / answers as f64, answers));
        self
    }

    pub fn max(&self) -> Option<f64> {
        self.max
    }

    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// The price table in use (configured, or the model's published price).
    pub fn prices(&self) -> Option<PriceTable> {
        self.prices
    }

    /// Mean cost of a finished attempt that reported one, if any have (all sessions).
    pub fn observed_mean(&self) -> Option<f64> {
        (self.observed.n > 0).then(|| self.observed.sum / self.observed.n as f64)
    }

    /// The expected cost of one request for `prompt`.
    pub fn estimate(&self, prompt: &Prompt) -> f64 {
        self.estimate_tokens(prompt_tokens_estimate(prompt))
    }

    /// [`Budget::estimate`] of a prompt of `prompt_tokens` (its [`prompt_tokens_estimate`]): the
    /// run's mean cost per request once a few are known, before that the price-table bound.
    pub fn estimate_tokens(&self, prompt_tokens: u64) -> f64 {
        if self.observed.n >= MIN_OBSERVATIONS {
            return self.observed.sum / self.observed.n as f64;
        }
        match (self.table_bound(prompt_tokens), self.observed_mean()) {
            (Some(table), observed) => observed.map_or(table, |o| o.max(table)),
            (None, observed) => observed.unwrap_or(0.0),
        }
    }

    /// The most one request for a prompt of `prompt_tokens` can cost by the price table:
    /// the prompt and `max_tokens` of completion.
    fn table_bound(&self, prompt_tokens: u64) -> Option<f64> {
        let p = self.prices?;
        let completion = self
            .max_tokens
            .map_or(DEFAULT_COMPLETION_ESTIMATE, u64::from);
        Some(prompt_tokens as f64 * p.prompt + completion as f64 * p.completion)
    }

    /// What to reserve for one request: an upper bound where one is known (the price-table bound,
    /// raised to the dearest request the run has seen), else the dearest request seen; `None` when
    /// nothing is known yet.
    pub fn reservation_for(&self, prompt_tokens: u64) -> Option<f64> {
        let seen = (self.observed.n > 0).then_some(self.observed.max);
        match (self.table_bound(prompt_tokens), seen) {
            (Some(table), Some(seen)) => Some(table.max(seen)),
            (table, seen) => table.or(seen),
        }
    }

    /// Projected cost of `prompts`, if anything is known to project from.
    pub fn project<'a>(&self, prompts: impl Iterator<Item = &'a Prompt>) -> Option<f64> {
        if self.prices.is_none() && self.observed.n == 0 {
            return None;
        }
        Some(prompts.map(|p| self.estimate(p)).sum())
    }

    /// [`Budget::project`] from each prompt's [`prompt_tokens_estimate`].
    pub fn project_tokens(&self, prompt_tokens: impl Iterator<Item = u64>) -> Option<f64> {
        if self.prices.is_none() && self.observed.n == 0 {
            return None;
        }
        Some(prompt_tokens.map(|t| self.estimate_tokens(t)).sum())
    }

    /// The expected and worst-case cost of prompts of `prompt_tokens` each: the expected figure
    /// from the run's mean cost once a few answers reported one, else from the price table with
    /// the mean completion length observed, else (no answer yet) with an assumed share of the
    /// completion limit; `None` when nothing is known to project from.
    pub fn projection(&self, prompt_tokens: impl Iterator<Item = u64>) -> Option<Projection> {
        let limit = self
            .max_tokens
            .map_or(DEFAULT_COMPLETION_ESTIMATE, u64::from);
        let (per_prompt, basis): (Box<dyn Fn(u64) -> f64 + '_>, String) = match (
            self.prices,
            self.completions,
        ) {
            _ if self.observed.n >= MIN_OBSERVATIONS => {
                let mean = self.observed.sum / self.observed.n as f64;
                let basis = format!(
                    "the mean cost of the run's {} costed answer(s), ${mean:.6} each",
                    self.observed.n
                );
                (Box::new(move |_| mean), basis)
            }
            (Some(p), Some((mean, answers))) => {
                let basis = format!(
                        "the price table and the mean answer length observed, {mean:.0} completion token(s) over {answers} answer(s)"
                    );
                (
                    Box::new(move |t| t as f64 * p.prompt + mean * p.completion),
                    basis,
                )
            }
            (Some(p), None) => {
                let assumed = limit as f64 * ASSUMED_COMPLETION_SHARE;
                let basis = format!(
                        "the price table, assuming each answer uses {:.0}% of the {limit}-token completion limit ({assumed:.0} tokens) until answers arrive",
                        ASSUMED_COMPLETION_SHARE * 100.0
                    );
                (
                    Box::new(move |t| t as f64 * p.prompt + assumed * p.completion),
                    basis,
                )
            }
            (None, _) if self.observed.n > 0 => {
                let mean = self.observed.sum / self.observed.n as f64;
                let basis = format!(
                    "the mean cost of the run's {} costed answer(s) (few: rough)",
                    self.observed.n
                );
                (Box::new(move |_| mean), basis)
            }
            (None, _) => return None,
        };
        let mut expected = 0.0;
        let mut worst = 0.0;
        for tokens in prompt_tokens {
            expected += per_prompt(tokens);
            worst += self.reservation_for(tokens).unwrap_or(0.0);
        }
        let bounded = self.prices.is_some() || self.observed.n > 0;
        Some(Projection {
            expected_usd: expected,
            worst_case_usd: bounded.then_some(worst.max(expected)),
            basis,
        })
    }

    /// Ask to start one request for a prompt of `prompt_tokens`. Under a cap, what is reserved
    /// for every request in flight counts against it, so requests in flight cannot together cross
    /// it; while nothing tells what a request costs, one request at a time goes out to find out.
    pub fn reserve(&mut self, prompt_tokens: u64) -> Reservation {
        let bound = self.reservation_for(prompt_tokens);
        let Some(max) = self.max else {
            let amount = bound.unwrap_or(0.0);
            self.hold(amount);
            return Reservation::Granted(amount);
        };
        if self.spent >= max {
            return Reservation::Full;
        }
        match bound {
            Some(amount) if self.spent + self.reserved + amount <= max => {
                self.hold(amount);
                Reservation::Granted(amount)
            }
            None if self.costless => {
                self.hold(0.0);
                Reservation::Granted(0.0)
            }
            // The first request of a run with no price known: it alone is in flight.
            None if self.holders == 0 => {
                self.hold(0.0);
                Reservation::Granted(0.0)
            }
            _ if self.holders > 0 => Reservation::Wait,
            _ => Reservation::Full,
        }
    }

    fn hold(&mut self, amount: f64) {
        self.reserved += amount;
        self.holders += 1;
    }

    /// An attempt ended (`answered`: with a successful answer): release its reservation and book
    /// what it cost.
    pub fn settle(&mut self, reserved: f64, cost: Option<f64>, answered: bool) {
        if answered && cost.is_none() && self.prices.is_none() {
            self.costless = true;
        }
        self.reserved = (self.reserved - reserved).max(0.0);
        self.holders = self.holders.saturating_sub(1);
        if self.holders == 0 {
            // No drift from float rounding once nothing is in flight.
            self.reserved = 0.0;
        }
        if let Some(cost) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            self.spent += cost;
            self.observed.sum += cost;
            self.observed.n += 1;
            self.observed.max = self.observed.max.max(cost);
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
            ..Prompt::default()
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
    fn without_a_price_one_request_finds_the_cost_then_reservations_stop_at_the_cap() {
        let mut b = Budget::new(Some(1.0), None, Some(100), 0.25);
        assert_eq!(b.reserve(10), Reservation::Granted(0.0), "the probe");
        assert_eq!(
            b.reserve(10),
            Reservation::Wait,
            "one at a time until a cost is known"
        );
        b.settle(0.0, Some(0.3), true);
        assert!((b.spent() - 0.55).abs() < 1e-12);
        // 0.55 spent; each request may cost 0.3: one fits (0.85), a second (1.15) waits.
        assert_eq!(b.reserve(10), Reservation::Granted(0.3));
        assert_eq!(b.reserve(10), Reservation::Wait);
        b.settle(0.3, Some(0.1), true);
        // 0.65 spent, nothing in flight: 0.95 fits, then 1.25 can never fit.
        assert_eq!(b.reserve(10), Reservation::Granted(0.3));
        b.settle(0.3, Some(0.3), true);
        assert_eq!(b.reserve(10), Reservation::Full);
        // Mean of observed costs (0.3, 0.1, 0.3) now drives the estimate.
        assert!((b.estimate(&prompt("x")) - 0.7 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn history_of_earlier_sessions_bounds_the_first_requests_of_a_resume() {
        // Stopped at 0.2000 after 200 requests of 0.001; resumed with 0.0009 of headroom.
        let history = CostHistory {
            sum: 0.2,
            n: 200,
            max: 0.001,
        };
        let mut b = Budget::new(Some(0.2009), None, None, 0.2).with_history(history);
        assert_eq!(b.reserve(5), Reservation::Full, "not even one request fits");
        let mut b = Budget::new(Some(0.2031), None, None, 0.2).with_history(history);
        let granted = (0..64)
            .filter(|_| matches!(b.reserve(5), Reservation::Granted(_)))
            .count();
        assert_eq!(granted, 3, "three requests of headroom, not 64");
    }

    #[test]
    fn an_endpoint_that_reports_no_cost_is_not_held_to_one_request() {
        let mut b = Budget::new(Some(1.0), None, None, 0.0);
        assert_eq!(b.reserve(5), Reservation::Granted(0.0));
        b.settle(0.0, None, false);
        assert_eq!(b.reserve(5), Reservation::Granted(0.0));
        assert_eq!(b.reserve(5), Reservation::Wait, "a failure told nothing");
        b.settle(0.0, None, true);
        assert!((0..10).all(|_| b.reserve(5) == Reservation::Granted(0.0)));
    }

    #[test]
    fn projection_expects_a_share_of_the_limit_then_the_observed_length() {
        let prices = PriceTable {
            prompt: 1e-6,
            completion: 4e-6,
        };
        let b = Budget::new(None, Some(prices), Some(1000), 0.0);
        let p = b.projection([100u64, 100].into_iter()).unwrap();
        // Each: 100 prompt tokens + 250 assumed completion tokens; worst 100 + 1000.
        assert!(
            (p.expected_usd - 2.0 * (100e-6 + 250.0 * 4e-6)).abs() < 1e-12,
            "{p:?}"
        );
        let worst = p.worst_case_usd.unwrap();
        assert!(
            (worst - 2.0 * (100e-6 + 1000.0 * 4e-6)).abs() < 1e-12,
            "{p:?}"
        );
        assert!(p.basis.contains("25%"), "{}", p.basis);
        // Two answers of 50 completion tokens seen: they set the expected length.
        let b = b.with_completions(100, 2);
        let p = b.projection([100u64].into_iter()).unwrap();
        assert!(
            (p.expected_usd - (100e-6 + 50.0 * 4e-6)).abs() < 1e-12,
            "{p:?}"
        );
        assert!(
            p.basis.contains("50 completion token(s) over 2"),
            "{}",
            p.basis
        );
        assert_eq!(
            Budget::new(None, None, None, 0.0).projection([1u64].into_iter()),
            None
        );
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
