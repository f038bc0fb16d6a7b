//! Whether to keep sending a run's prompts to a provider: `use` or `avoid`, with the reason, and
//! the routing line that turns the verdicts into a run config.
//!
//! The rules, in order (the first that holds decides):
//! 1. no answer at all: **avoid** (every attempt failed);
//! 2. more than [`MAX_FAILED_SHARE`] of its attempts failed: **avoid** (money and time lost to
//!    retries, and a resume is routed to it again);
//! 3. `build` drops more than [`MAX_DROPPED_SHARE`] of its samples: **avoid** (paid for, not
//!    used);
//! 4. fewer than [`MIN_EXACT_SHARE`] of its samples are exact: **avoid** (the rest carry doubt
//!    a trainer has to filter away). Samples whose only doubt is a `max_tokens` cut are left
//!    out of this share: the run's limit put them there, and any provider would do the same;
//! 5. otherwise **use**.
//!
//! 5% and 60% are the targets the project holds real traffic to (dropped ≤ 5%, exact ≥ 60%):
//! a provider below them pulls a run below them.

use serde::{Deserialize, Serialize};

/// Attempts that may fail before a provider is avoided.
pub const MAX_FAILED_SHARE: f64 = 0.5;
/// Samples `build` may drop before a provider is avoided.
pub const MAX_DROPPED_SHARE: f64 = 0.05;
/// Samples that must be exact for a provider to be used.
pub const MIN_EXACT_SHARE: f64 = 0.6;

/// Use a provider, or route around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Use,
    Avoid,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Use => "use",
            Verdict::Avoid => "avoid",
        }
    }
}

/// What a verdict is decided on: one provider's counts.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Successful answers.
    pub answers: u64,
    /// Failed attempts, and the most frequent failure class.
    pub failed: u64,
    pub top_failure: Option<(String, u64)>,
    /// Samples verified, exact ones, ones `build` drops, and the most frequent reason of the
    /// samples that are not exact.
    pub samples: u64,
    pub exact: u64,
    pub dropped: u64,
    pub top_doubt: Option<(String, u64)>,
    /// Samples not exact only because `max_tokens` cut them.
    pub cut: u64,
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

fn named(top: &Option<(String, u64)>) -> String {
    top.as_ref()
        .map(|(name, n)| format!(" (mostly {name}: {n})"))
        .unwrap_or_default()
}

/// The verdict on one provider and the reason, in words.
pub fn judge(f: &Facts) -> (Verdict, String) {
    let attempts = f.answers + f.failed;
    if f.answers == 0 {
        return (
            Verdict::Avoid,
            format!(
                "all {} attempt(s) failed{}",
                f.failed,
                named(&f.top_failure)
            ),
        );
    }
    if share(f.failed, attempts) > MAX_FAILED_SHARE {
        return (
            Verdict::Avoid,
            format!(
                "{} of {attempts} attempts failed{}",
                f.failed,
                named(&f.top_failure)
            ),
        );
    }
    if share(f.dropped, f.samples) > MAX_DROPPED_SHARE {
        return (
            Verdict::Avoid,
            format!(
                "build drops {} of {} samples{}",
                f.dropped,
                f.samples,
                named(&f.top_doubt)
            ),
        );
    }
    let judged = f.samples.saturating_sub(f.cut);
    let cut_note = if f.cut > 0 {
        format!(" ({} cut by max_tokens not counted)", f.cut)
    } else {
        String::new()
    };
    if judged > 0 && share(f.exact, judged) < MIN_EXACT_SHARE {
        return (
            Verdict::Avoid,
            format!(
                "only {} of {judged} samples exact{}{cut_note}",
                f.exact,
                named(&f.top_doubt)
            ),
        );
    }
    let mut reason = format!("{} of {judged} samples exact{cut_note}", f.exact);
    if f.failed > 0 {
        reason.push_str(&format!(", {} of {attempts} attempts failed", f.failed));
    }
    (Verdict::Use, reason)
}

/// The line to paste into the run config: OpenRouter's `provider` routing without the avoided
/// providers (`ignore`), or, when every provider is avoided, `order` from the best to the worst
/// (`ranked`: names, best first) so the least bad answer first. `None` when nothing needs to
/// change (no provider to avoid, or no named provider at all).
pub fn routing_line(verdicts: &[(String, Verdict)], ranked: &[String]) -> Option<String> {
    let quoted = |names: &[&String]| {
        names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let avoid: Vec<&String> = verdicts
        .iter()
        .filter(|(_, v)| *v == Verdict::Avoid)
        .map(|(n, _)| n)
        .collect();
    if avoid.is_empty() {
        return None;
    }
    if avoid.len() < verdicts.len() {
        return Some(format!("provider = {{ ignore = [{}] }}", quoted(&avoid)));
    }
    let ranked: Vec<&String> = ranked.iter().collect();
    Some(format!("provider = {{ order = [{}] }}", quoted(&ranked)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(answers: u64, failed: u64, samples: u64, exact: u64, dropped: u64) -> Facts {
        Facts {
            answers,
            failed,
            samples,
            exact,
            dropped,
            ..Facts::default()
        }
    }

    #[test]
    fn each_rule_in_turn() {
        assert_eq!(judge(&facts(0, 9, 0, 0, 0)).0, Verdict::Avoid);
        assert_eq!(judge(&facts(4, 5, 4, 4, 0)).0, Verdict::Avoid);
        assert_eq!(judge(&facts(5, 5, 5, 5, 0)).0, Verdict::Use);
        // 1 of 20 dropped is 5%: not more than the limit.
        assert_eq!(judge(&facts(20, 0, 20, 19, 1)).0, Verdict::Use);
        assert_eq!(judge(&facts(20, 0, 20, 18, 2)).0, Verdict::Avoid);
        assert_eq!(judge(&facts(10, 0, 10, 6, 0)).0, Verdict::Use);
        assert_eq!(judge(&facts(10, 0, 10, 5, 0)).0, Verdict::Avoid);
        // Five cut by max_tokens: 5 of the other 5 are exact.
        let (verdict, reason) = judge(&Facts {
            cut: 5,
            ..facts(10, 0, 10, 5, 0)
        });
        assert_eq!(verdict, Verdict::Use);
        assert_eq!(
            reason,
            "5 of 5 samples exact (5 cut by max_tokens not counted)"
        );
        let (_, reason) = judge(&Facts {
            top_doubt: Some(("usage_disagrees".into(), 34)),
            ..facts(34, 0, 34, 0, 34)
        });
        assert_eq!(
            reason,
            "build drops 34 of 34 samples (mostly usage_disagrees: 34)"
        );
    }

    #[test]
    fn routing_ignores_the_avoided_or_orders_all() {
        let v = |n: &str, v| (n.to_string(), v);
        assert_eq!(routing_line(&[v("A", Verdict::Use)], &[]), None);
        assert_eq!(
            routing_line(
                &[
                    v("A", Verdict::Use),
                    v("B", Verdict::Avoid),
                    v("C", Verdict::Avoid)
                ],
                &[]
            )
            .as_deref(),
            Some(r#"provider = { ignore = ["B", "C"] }"#)
        );
        assert_eq!(
            routing_line(
                &[v("A", Verdict::Avoid), v("B", Verdict::Avoid)],
                &["B".into(), "A".into()]
            )
            .as_deref(),
            Some(r#"provider = { order = ["B", "A"] }"#)
        );
    }
}
