//! Which samples a build keeps: `length` answers, fidelity classes, a maximum total length.
//!
//! Defaults, and why:
//! - `length` answers are **kept**: their ids are still exactly what the model produced (there is
//!   just no end token); a trainer that wants only finished answers passes `--length drop`.
//! - fidelity classes: **`inconsistent` is dropped**, every other class kept — inconsistent ids
//!   match no token stream the answer allows, the others are the model's ids or carry their doubt
//!   in `fidelity_class` / `fidelity_reasons` for the trainer to filter.
//! - no maximum length; with `--max-len N` an over-long sample is **dropped** unless
//!   `--over-length cut`, which keeps its first N tokens (ids and mask cut together).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::row::Row;
use crate::reconstruct::FidelityClass;

/// What to do with answers that `max_tokens` cut (`finish_reason: length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LengthPolicy {
    #[default]
    Keep,
    Drop,
}

/// What to do with samples longer than the maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum OverLength {
    #[default]
    Drop,
    Cut,
}

/// The policies of one build (written to `build.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policies {
    pub length: LengthPolicy,
    /// Fidelity classes whose samples are dropped.
    pub drop_classes: BTreeSet<FidelityClass>,
    pub max_len: Option<usize>,
    pub over_length: OverLength,
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            length: LengthPolicy::Keep,
            drop_classes: BTreeSet::from([FidelityClass::Inconsistent]),
            max_len: None,
            over_length: OverLength::Drop,
        }
    }
}

/// Why a sample was dropped (the keys of `dropped_by_reason`).
pub mod reason {
    pub const LENGTH: &str = "finish_reason_length";
    pub const OVER_LENGTH: &str = "over_max_len";
    pub const NOT_BUILT: &str = "not_built";
    pub const CORRUPT_LINE: &str = "corrupt_journal_line";
    pub const INCOMPLETE_CONVERSATION: &str = "incomplete_conversation";
    /// `class:NAME` for a dropped fidelity class.
    pub fn class(class: crate::reconstruct::FidelityClass) -> String {
        format!("class:{}", class.name())
    }
}

/// The verdict on one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Kept after cutting it to the maximum length.
    Cut,
    Drop(String),
}

impl Policies {
    /// Parse `--drop-class a,b` (`none` keeps every class).
    pub fn parse_classes(list: &str) -> Result<BTreeSet<FidelityClass>, String> {
        let mut classes = BTreeSet::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "none" {
                continue;
            }
            let class = FidelityClass::ALL
                .into_iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = FidelityClass::ALL.iter().map(|c| c.name()).collect();
                    format!(
                        "unknown fidelity class {name:?}; known: {} (or none)",
                        known.join(", ")
                    )
                })?;
            classes.insert(class);
        }
        Ok(classes)
    }

    /// Apply the policies to `row` (cutting it in place when the verdict is [`Verdict::Cut`]).
    pub fn apply(&self, row: &mut Row) -> Verdict {
        if self.drop_classes.contains(&row.fidelity_class) {
            return Verdict::Drop(reason::class(row.fidelity_class));
        }
        if self.length == LengthPolicy::Drop && row.finish_reason.as_deref() == Some("length") {
            return Verdict::Drop(reason::LENGTH.to_string());
        }
        match self.max_len {
            Some(max) if row.input_ids.len() > max => match self.over_length {
                OverLength::Drop => Verdict::Drop(reason::OVER_LENGTH.to_string()),
                OverLength::Cut => {
                    row.cut(max);
                    Verdict::Cut
                }
            },
            _ => Verdict::Keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::row::RowMeta;
    use crate::reconstruct::Fidelity;

    fn row(class: FidelityClass, finish: &str, len: usize) -> Row {
        Row::single(
            "x".into(),
            vec![0; 2],
            &vec![1; len - 2],
            Fidelity::new(class),
            RowMeta {
                finish_reason: Some(finish.into()),
                ..RowMeta::default()
            },
        )
    }

    #[test]
    fn defaults_drop_only_inconsistent() {
        let p = Policies::default();
        assert_eq!(
            p.apply(&mut row(FidelityClass::Inconsistent, "stop", 5)),
            Verdict::Drop("class:inconsistent".into())
        );
        for class in FidelityClass::ALL
            .into_iter()
            .filter(|c| *c != FidelityClass::Inconsistent)
        {
            assert_eq!(p.apply(&mut row(class, "length", 5)), Verdict::Keep);
        }
    }

    #[test]
    fn length_and_max_len() {
        let mut p = Policies {
            length: LengthPolicy::Drop,
            max_len: Some(4),
            ..Policies::default()
        };
        assert_eq!(
            p.apply(&mut row(FidelityClass::Unique, "length", 3)),
            Verdict::Drop(reason::LENGTH.into())
        );
        assert_eq!(
            p.apply(&mut row(FidelityClass::Unique, "stop", 5)),
            Verdict::Drop(reason::OVER_LENGTH.into())
        );
        p.over_length = OverLength::Cut;
        let mut r = row(FidelityClass::Unique, "stop", 6);
        assert_eq!(p.apply(&mut r), Verdict::Cut);
        assert_eq!((r.input_ids.len(), r.completion_len), (4, 2));
    }

    #[test]
    fn class_lists() {
        assert!(Policies::parse_classes("none").expect("none").is_empty());
        assert_eq!(
            Policies::parse_classes("lossy, ambiguous")
                .expect("two")
                .len(),
            2
        );
        assert!(Policies::parse_classes("exactish").is_err());
    }
}
