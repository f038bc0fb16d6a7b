//! Usage that cannot lie about money: what of an answer's `usage` is believed.
//!
//! A token count is a non-negative integer or it is not reported (`"many"`, `1e30`, `-3`, `2.5`
//! are not counts). A `cost` is a non-negative number or it is not believed; one far above what
//! the price table says the answer's tokens can cost ([`cost_above_bound`]) is not believed
//! either. A budget cap bounds spending only if no answer can report negative or absurd money.
//! What was not believed is named by a [`UsageDoubt`], journaled with the record (`usage_flag`),
//! and the first provider that sent such usage is named once on screen ([`say_once`]).

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::UsageNumbers;

/// How many times the price table's cost of an answer's tokens a reported cost may be before
/// it is not believed (extras such as web search cost more than the tokens; a thousandfold does
/// not happen).
pub const COST_BOUND_FACTOR: f64 = 100.0;

/// What a cost may exceed the bound by in any case (USD): per-request extras priced by the call.
pub const COST_BOUND_SLACK_USD: f64 = 0.05;

/// Why part of an answer's usage was not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageDoubt {
    /// `prompt_tokens` or `completion_tokens` is not a non-negative integer: not reported.
    TokensNotCounts,
    /// `cost` is not a number.
    CostNotANumber,
    /// `cost` is below zero.
    NegativeCost,
    /// `cost` is far above the price table's bound for the answer's tokens.
    CostAboveBound,
}

impl UsageDoubt {
    /// The name journaled in the record's `usage_flag`.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageDoubt::TokensNotCounts => "tokens_not_counts",
            UsageDoubt::CostNotANumber => "cost_not_a_number",
            UsageDoubt::NegativeCost => "negative_cost",
            UsageDoubt::CostAboveBound => "cost_above_bound",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            UsageDoubt::TokensNotCounts => "token counts that are not non-negative integers",
            UsageDoubt::CostNotANumber => "a cost that is not a number",
            UsageDoubt::NegativeCost => "a negative cost",
            UsageDoubt::CostAboveBound => "a cost far above the price table's",
        }
    }
}

/// The believed numbers of an answer's `usage` object (absent or null: nothing reported).
pub fn usage_of(usage: Option<&Value>) -> UsageNumbers {
    let Some(usage) = usage.filter(|u| !u.is_null()) else {
        return UsageNumbers::default();
    };
    let mut doubt = None;
    let mut count = |key: &str| match usage.get(key) {
        None | Some(Value::Null) => None,
        Some(value) => {
            let n = value.as_u64();
            if n.is_none() {
                doubt = Some(UsageDoubt::TokensNotCounts);
            }
            n
        }
    };
    let prompt_tokens = count("prompt_tokens");
    let completion_tokens = count("completion_tokens");
    let cost = match usage.get("cost") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if c >= 0.0 && c.is_finite() => Some(c),
            Some(c) if c < 0.0 => {
                doubt = Some(UsageDoubt::NegativeCost);
                None
            }
            _ => {
                doubt = Some(UsageDoubt::CostNotANumber);
                None
            }
        },
        Some(_) => {
            doubt = Some(UsageDoubt::CostNotANumber);
            None
        }
    };
    UsageNumbers {
        prompt_tokens,
        completion_tokens,
        cost,
        doubt,
    }
}

/// Whether `cost` is far above what the answer's tokens cost at `prices` (USD per prompt and per
/// completion token). Without token counts there is no bound.
pub fn cost_above_bound(usage: &UsageNumbers, prices: (f64, f64)) -> bool {
    let (Some(cost), Some(prompt)) = (usage.cost, usage.prompt_tokens) else {
        return false;
    };
    let completion = usage.completion_tokens.unwrap_or(0);
    let table = prompt as f64 * prices.0 + completion as f64 * prices.1;
    cost > table * COST_BOUND_FACTOR + COST_BOUND_SLACK_USD
}

/// `usage` with a cost above the price table's bound not believed (then the table prices the
/// answer).
pub fn believed(usage: &UsageNumbers, prices: Option<(f64, f64)>) -> UsageNumbers {
    match prices {
        Some(prices) if cost_above_bound(usage, prices) => UsageNumbers {
            cost: None,
            doubt: Some(UsageDoubt::CostAboveBound),
            ..*usage
        },
        _ => *usage,
    }
}

static SAID: AtomicBool = AtomicBool::new(false);

/// Name the first provider whose usage was not believed, once per process.
pub fn say_once(doubt: UsageDoubt, provider: Option<&str>, endpoint: &str) {
    if SAID.swap(true, Ordering::Relaxed) {
        return;
    }
    let who = match provider {
        Some(provider) => format!("provider {provider:?} (endpoint {endpoint:?})"),
        None => format!("endpoint {endpoint:?}"),
    };
    tracing::warn!(
        "{who} reported {} in an answer's usage: not believed (the price table or estimate is \
         used, and such records carry `usage_flag`); later ones are not said again",
        doubt.describe()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_counts_must_be_non_negative_integers() {
        for bad in [
            json!("many"),
            json!(1e30),
            json!(-3),
            json!(2.5),
            json!([1]),
        ] {
            let u = usage_of(Some(&json!({"prompt_tokens": bad, "completion_tokens": 4})));
            assert_eq!(u.prompt_tokens, None, "{bad}");
            assert_eq!(u.completion_tokens, Some(4));
            assert_eq!(u.doubt, Some(UsageDoubt::TokensNotCounts));
        }
        let u = usage_of(Some(
            &json!({"prompt_tokens": 3, "completion_tokens": null}),
        ));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.doubt),
            (Some(3), None, None)
        );
    }

    #[test]
    fn a_cost_below_zero_or_not_a_number_is_not_believed() {
        let cost = |c: Value| usage_of(Some(&json!({"prompt_tokens": 1, "cost": c})));
        assert_eq!(cost(json!(-5)).cost, None);
        assert_eq!(cost(json!(-5)).doubt, Some(UsageDoubt::NegativeCost));
        assert_eq!(cost(json!(-0.000001)).doubt, Some(UsageDoubt::NegativeCost));
        assert_eq!(cost(json!("1")).doubt, Some(UsageDoubt::CostNotANumber));
        assert_eq!(cost(json!("1")).cost, None);
        assert_eq!(cost(json!(0)).cost, Some(0.0));
        assert_eq!(cost(json!(1.5e-6)).cost, Some(1.5e-6));
        assert_eq!(cost(json!(null)).doubt, None);
        assert_eq!(usage_of(None), UsageNumbers::default());
    }

    #[test]
    fn a_cost_far_above_the_table_is_not_believed() {
        // $1 and $2 per million tokens.
        let prices = (1e-6, 2e-6);
        let usage = |cost: f64| {
            usage_of(Some(
                &json!({"prompt_tokens": 1000, "completion_tokens": 500, "cost": cost}),
            ))
        };
        // The table says $0.002.
        assert_eq!(believed(&usage(0.002), Some(prices)).cost, Some(0.002));
        assert_eq!(believed(&usage(0.2), Some(prices)).cost, Some(0.2));
        let absurd = believed(&usage(1000.0), Some(prices));
        assert_eq!(absurd.cost, None);
        assert_eq!(absurd.doubt, Some(UsageDoubt::CostAboveBound));
        assert_eq!(believed(&usage(1000.0), None).cost, Some(1000.0));
    }
}
