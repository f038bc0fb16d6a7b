//! OpenRouter's provider routing over the simulator's named providers ([`super::providers`]),
//! as OpenRouter documents its `provider` object (openrouter.ai/docs, "Provider Routing"):
//!
//! - `only`: only these may answer; `ignore`: these never do (names match case-insensitively,
//!   as the endpoint listing's lower-case tags route).
//! - By default requests are load-balanced over the allowed providers, weighted by the inverse
//!   square of their price (OpenRouter's price-based strategy; equal prices: an even spread).
//!   The pick is by request key, so a retried or resumed request meets the same provider.
//! - `sort` (`price`, `throughput`, `latency`) orders them by that instead, and `order` tries the
//!   named ones first, in its order; either turns load balancing off.
//! - `allow_fallbacks` (default true): when the first choice fails (a provider that is `down`)
//!   the next is tried. Off, only `order`'s providers (without `order`: only the first choice)
//!   are tried, and the request fails as the last one tried did.

use serde_json::Value;

use super::providers::NamedProvider;

/// A request's `provider` preferences.
#[derive(Debug, Clone, PartialEq)]
pub struct Preferences {
    pub only: Vec<String>,
    pub order: Vec<String>,
    pub ignore: Vec<String>,
    pub allow_fallbacks: bool,
    pub sort: Option<Sort>,
}

impl Default for Preferences {
    fn default() -> Self {
        Preferences {
            only: Vec::new(),
            order: Vec::new(),
            ignore: Vec::new(),
            allow_fallbacks: true,
            sort: None,
        }
    }
}

/// `provider.sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Price,
    Throughput,
    Latency,
}

impl Preferences {
    /// Read a request's `provider` object (`None` or not an object: the defaults). `sort` may
    /// be a string or `{"by": …}`; an unknown sort is refused, as OpenRouter refuses it.
    pub fn from_json(provider: Option<&Value>) -> Result<Preferences, String> {
        let Some(p) = provider.filter(|p| p.is_object()) else {
            return Ok(Preferences::default());
        };
        let names = |key: &str| -> Vec<String> {
            p.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let sort = match p.get("sort").map(|s| s.get("by").unwrap_or(s)) {
            None | Some(Value::Null) => None,
            Some(by) => Some(match by.as_str() {
                Some("price") => Sort::Price,
                Some("throughput") => Sort::Throughput,
                Some("latency") => Sort::Latency,
                _ => {
                    return Err(format!(
                        "provider.sort {by}: expected \"price\", \"throughput\" or \"latency\""
                    ))
                }
            }),
        };
        Ok(Preferences {
            only: names("only"),
            order: names("order"),
            ignore: names("ignore"),
            allow_fallbacks: p
                .get("allow_fallbacks")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            sort,
        })
    }
}

/// Why a request found no provider (OpenRouter's 404 message).
#[derive(Debug, Clone, PartialEq)]
pub struct NoProvider(pub String);

fn named(list: &[String], p: &NamedProvider) -> bool {
    list.iter().any(|n| n.eq_ignore_ascii_case(&p.name))
}

/// The providers a request may be answered by, in the order they are tried: the first choice,
/// then its fallbacks. Empty only when the simulator has no named providers.
pub fn candidates<'a>(
    providers: &'a [NamedProvider],
    prefs: &Preferences,
    key: u64,
) -> Result<Vec<&'a NamedProvider>, NoProvider> {
    if providers.is_empty() {
        return Ok(Vec::new());
    }
    let allowed: Vec<&NamedProvider> = providers
        .iter()
        .filter(|p| prefs.only.is_empty() || named(&prefs.only, p))
        .filter(|p| !named(&prefs.ignore, p))
        .collect();
    if allowed.is_empty() {
        return Err(NoProvider(format!(
            "No endpoints found matching your data policy (provider only {:?}, ignore {:?}; this simulator has {})",
            prefs.only,
            prefs.ignore,
            providers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut rest = ranked(allowed, prefs.sort, key);
    let mut tried: Vec<&NamedProvider> = Vec::new();
    for want in &prefs.order {
        if let Some(at) = rest.iter().position(|p| p.name.eq_ignore_ascii_case(want)) {
            tried.push(rest.remove(at));
        }
    }
    if prefs.allow_fallbacks {
        tried.extend(rest);
    } else if prefs.order.is_empty() || tried.is_empty() {
        tried.extend(rest.into_iter().take(1));
    }
    Ok(tried)
}

/// The allowed providers best first: by `sort`, else the load-balanced pick first and the
/// others by price.
fn ranked(mut allowed: Vec<&NamedProvider>, sort: Option<Sort>, key: u64) -> Vec<&NamedProvider> {
    let by = |f: fn(&NamedProvider) -> f64| {
        move |a: &&NamedProvider, b: &&NamedProvider| f(a).total_cmp(&f(b))
    };
    match sort {
        Some(Sort::Price) => allowed.sort_by(by(|p| p.price)),
        Some(Sort::Throughput) => allowed.sort_by(by(|p| -p.throughput)),
        Some(Sort::Latency) => allowed.sort_by(by(|p| p.latency_ms)),
        None => {
            let first = balanced(&allowed, key);
            let pick = allowed.remove(first);
            allowed.sort_by(by(|p| p.price));
            allowed.insert(0, pick);
        }
    }
    allowed
}

/// The load-balanced pick for request `key`: weighted by the inverse square of the price
/// (equal prices: `key` modulo the count, an even spread over prompts).
fn balanced(allowed: &[&NamedProvider], key: u64) -> usize {
    let weights: Vec<f64> = allowed
        .iter()
        .map(|p| 1.0 / p.price.max(1e-9).powi(2))
        .collect();
    if weights.windows(2).all(|w| w[0] == w[1]) {
        return (key % allowed.len() as u64) as usize;
    }
    let total: f64 = weights.iter().sum();
    // The key's top 53 bits as a fraction in [0, 1).
    let mut left = (key >> 11) as f64 / (1u64 << 53) as f64 * total;
    for (i, w) in weights.iter().enumerate() {
        if left < *w {
            return i;
        }
        left -= w;
    }
    allowed.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn providers(specs: &[&str]) -> Vec<NamedProvider> {
        specs.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn names(list: &[&NamedProvider]) -> Vec<String> {
        list.iter().map(|p| p.name.clone()).collect()
    }

    fn prefs(v: Value) -> Preferences {
        Preferences::from_json(Some(&v)).unwrap()
    }

    #[test]
    fn preferences_read_as_openrouter_documents_them() {
        let p = prefs(json!({"only": ["a"], "order": ["b"], "ignore": ["c"],
                             "allow_fallbacks": false, "sort": {"by": "latency"}}));
        assert_eq!(p.only, ["a"]);
        assert_eq!(p.order, ["b"]);
        assert_eq!(p.ignore, ["c"]);
        assert!(!p.allow_fallbacks);
        assert_eq!(p.sort, Some(Sort::Latency));
        assert!(Preferences::from_json(Some(&json!({"sort": "speed"}))).is_err());
        assert!(Preferences::from_json(None).unwrap().allow_fallbacks);
    }

    #[test]
    fn only_ignore_order_and_fallbacks() {
        let ps = providers(&["A:vllm", "B:sglang", "C:vllm"]);
        // `only` balances over the listed ones (equal prices: by key).
        let only = prefs(json!({"only": ["a", "c"]}));
        let first: Vec<String> = (0..4)
            .map(|k| candidates(&ps, &only, k).unwrap()[0].name.clone())
            .collect();
        assert_eq!(first, ["A", "C", "A", "C"]);
        assert_eq!(candidates(&ps, &only, 0).unwrap().len(), 2);
        // `ignore` never answers.
        let ignore = prefs(json!({"ignore": ["B"]}));
        assert!((0..6).all(|k| candidates(&ps, &ignore, k)
            .unwrap()
            .iter()
            .all(|p| p.name != "B")));
        // `order` first, then the others as fallbacks; without fallbacks only the order.
        let order = prefs(json!({"order": ["c", "b"]}));
        assert_eq!(names(&candidates(&ps, &order, 5).unwrap()), ["C", "B", "A"]);
        let strict = prefs(json!({"order": ["c", "b"], "allow_fallbacks": false}));
        assert_eq!(names(&candidates(&ps, &strict, 5).unwrap()), ["C", "B"]);
        let single = prefs(json!({"allow_fallbacks": false}));
        assert_eq!(candidates(&ps, &single, 1).unwrap().len(), 1);
        assert!(candidates(&ps, &prefs(json!({"only": ["Z"]})), 0).is_err());
        assert!(candidates(&[], &single, 0).unwrap().is_empty());
    }

    #[test]
    fn sort_orders_by_the_attribute_and_price_weighs_the_balance() {
        let ps = providers(&[
            "Cheap:vllm:price=1,throughput=20,latency=900",
            "Fast:vllm:price=4,throughput=200,latency=300",
            "Near:vllm:price=2,throughput=50,latency=100",
        ]);
        let first = |sort: &str| {
            candidates(&ps, &prefs(json!({"sort": sort})), 7).unwrap()[0]
                .name
                .clone()
        };
        assert_eq!(first("price"), "Cheap");
        assert_eq!(first("throughput"), "Fast");
        assert_eq!(first("latency"), "Near");
        // Weights 1, 1/16, 1/4: the cheapest answers most, the dearest least.
        let mut count = std::collections::HashMap::new();
        for k in 0..2000u64 {
            let key = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            *count
                .entry(
                    candidates(&ps, &Preferences::default(), key).unwrap()[0]
                        .name
                        .clone(),
                )
                .or_insert(0) += 1;
        }
        assert!(
            count["Cheap"] > count["Near"] && count["Near"] > count["Fast"],
            "{count:?}"
        );
    }
}
