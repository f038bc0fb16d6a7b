//! [`Ledger`]: this session's attempts and cost per endpoint and provider, and which provider each
//! prompt's latest failure came from — what `summary.json` attributes failures and money with.
//!
//! A cost is *estimated* when the answer reported no `usage.cost` and draftgen priced its `usage`
//! tokens by the price table or the model's published price (`budget.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::api::ErrorClass;
use crate::journal::{Disposition, ProviderFigures, ResumeState};

/// Who served an attempt: the endpoint's name and the provider the answer named.
pub(crate) type Served = (String, Option<String>);

/// One ended attempt, as the ledger books it.
pub(crate) struct Booked<'a> {
    pub id: &'a str,
    pub endpoint: &'a str,
    pub provider: Option<&'a str>,
    pub error_class: Option<ErrorClass>,
    pub cost_usd: Option<f64>,
    /// The cost was priced by draftgen, not reported by the server.
    pub estimated: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Ledger {
    figures: BTreeMap<Served, ProviderFigures>,
    /// Prompts whose latest attempt this session failed, and who served it.
    latest_failure: HashMap<Box<str>, Served>,
}

impl Ledger {
    pub fn book(&mut self, attempt: &Booked<'_>) {
        let served = (
            attempt.endpoint.to_string(),
            attempt.provider.map(str::to_string),
        );
        let f = self
            .figures
            .entry(served.clone())
            .or_insert_with(|| ProviderFigures {
                endpoint: served.0.clone(),
                provider: served.1.clone(),
                ..ProviderFigures::default()
            });
        f.attempts += 1;
        let cost = attempt
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0);
        f.cost_usd += cost;
        if attempt.estimated {
            f.estimated_cost_usd += cost;
        }
        match attempt.error_class {
            None => {
                f.succeeded_attempts += 1;
                f.unpriced_answers += u64::from(attempt.cost_usd.is_none());
                self.latest_failure.remove(attempt.id);
            }
            Some(class) => {
                f.failed_attempts += 1;
                *f.failed_by_error_class.entry(class).or_default() += 1;
                self.latest_failure.insert(attempt.id.into(), served);
            }
        }
    }

    /// This session's figures, in (endpoint, provider) order.
    pub fn figures(&self) -> Vec<ProviderFigures> {
        self.figures.values().cloned().collect()
    }

    /// Of the prompts `state` would retry on resume, those whose latest failure this session came
    /// from a provider in `blocked`.
    pub fn retry_blocked(&self, state: &ResumeState, blocked: &HashSet<Served>) -> u64 {
        if blocked.is_empty() {
            return 0;
        }
        self.latest_failure
            .iter()
            .filter(|(id, served)| {
                blocked.contains(*served)
                    && matches!(
                        state.get(id).map(|p| p.disposition()),
                        Some(Disposition::Retry(_))
                    )
            })
            .count() as u64
    }
}

/// The providers a resume cannot get past: on an endpoint pinned to its `only` providers without
/// fallbacks, each listed provider that has failed and never answered in the run (`figures`, all
/// sessions). Only when every provider the endpoint may use is such is it blocked: otherwise
/// OpenRouter may route a retry to one that answers.
pub(crate) fn blocked_providers(
    figures: &[ProviderFigures],
    pinned: &BTreeMap<String, Vec<String>>,
) -> HashSet<Served> {
    let mut blocked = HashSet::new();
    for (endpoint, only) in pinned {
        let dead = |name: &str| {
            let of_it: Vec<&ProviderFigures> = figures
                .iter()
                .filter(|f| {
                    f.endpoint == *endpoint
                        && f.provider
                            .as_deref()
                            .is_some_and(|p| p.eq_ignore_ascii_case(name))
                })
                .collect();
            !of_it.is_empty()
                && of_it
                    .iter()
                    .all(|f| f.succeeded_attempts == 0 && f.failed_attempts > 0)
        };
        if !only.is_empty() && only.iter().all(|name| dead(name)) {
            for f in figures.iter().filter(|f| f.endpoint == *endpoint) {
                if f.succeeded_attempts == 0 {
                    blocked.insert((f.endpoint.clone(), f.provider.clone()));
                }
            }
        }
    }
    blocked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn booked<'a>(id: &'a str, provider: &'a str, failed: bool) -> Booked<'a> {
        Booked {
            id,
            endpoint: "or",
            provider: Some(provider),
            error_class: failed.then_some(ErrorClass::ServerError),
            cost_usd: Some(0.5),
            estimated: provider == "b",
        }
    }

    #[test]
    fn books_per_provider_and_blocks_only_when_every_pinned_provider_is_dead() {
        let mut ledger = Ledger::default();
        ledger.book(&booked("1", "a", true));
        ledger.book(&booked("2", "b", false));
        ledger.book(&booked("1", "a", true));
        ledger.book(&Booked {
            cost_usd: None,
            ..booked("3", "b", false)
        });
        let figures = ledger.figures();
        assert_eq!(figures.len(), 2);
        assert_eq!((figures[0].attempts, figures[0].failed_attempts), (2, 2));
        assert_eq!(figures[0].estimated_cost_usd, 0.0);
        assert_eq!(figures[1].estimated_cost_usd, 0.5);
        assert_eq!(
            (figures[1].succeeded_attempts, figures[1].unpriced_answers),
            (2, 1)
        );
        let pinned = |names: &[&str]| {
            BTreeMap::from([(
                "or".to_string(),
                names.iter().map(|n| n.to_string()).collect(),
            )])
        };
        let only_a = blocked_providers(&figures, &pinned(&["A"]));
        assert!(only_a.contains(&("or".to_string(), Some("a".to_string()))));
        assert!(blocked_providers(&figures, &pinned(&["a", "b"])).is_empty());
        assert!(blocked_providers(&figures, &BTreeMap::new()).is_empty());
    }
}
