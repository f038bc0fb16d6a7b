//! The provider conventions a target's scenario answers show, read by the inference `build` runs
//! over a run's answers (`reconstruct/infer/`): each answer's evidence for every convention,
//! tallied per target, adopted only by the same rule. A probe asks a handful of scenarios, below
//! [`infer::MIN_ANSWERS`], so it names what the answers show and says that the count is too small
//! to adopt it, rather than deciding on it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::api::ServerKind;
use crate::completion::Completion;
use crate::model::Profile;
use crate::reconstruct::infer::{self, Evidence, GroupEvidence, CONVENTIONS};
use crate::reconstruct::{ExchangeRequest, ReconstructOptions};

/// What one scenario answer shows: each convention's evidence, the form of its tool-call ids
/// and the field that carried its reasoning.
#[derive(Debug, Clone)]
pub struct AnswerEvidence {
    evidence: [Evidence; CONVENTIONS.len()],
    id_form: Option<&'static str>,
    reasoning_field: Option<&'static str>,
}

/// Read one answer as `build` reads an answer of an undeclared server or an OpenRouter
/// provider (`None`: the request or the answer cannot be read, or not rebuilt).
pub fn of_answer(
    profile: &Profile,
    openrouter: bool,
    body: &Value,
    response: &Value,
) -> Option<AnswerEvidence> {
    let request: ExchangeRequest = serde_json::from_value(body.clone()).ok()?;
    let completion = Completion::from_response(response).ok()?;
    let options = ReconstructOptions {
        kind: if openrouter {
            ServerKind::OpenRouter
        } else {
            ServerKind::Generic
        },
        ..ReconstructOptions::default()
    };
    let answer = infer::Answer {
        profile,
        request: &request,
        completion: &completion,
        options: &options,
    };
    let evidence = infer::evidence_of(&answer).ok()?;
    Some(AnswerEvidence {
        evidence,
        id_form: infer::id_form(profile, &completion),
        reasoning_field: infer::reasoning_field(profile.family.spec().reasoning_close, response),
    })
}

/// The conventions one target's answers show (`probe --json`: `verdicts[].conventions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConventionsFound {
    /// Answers read for evidence (with `--tokenizer`; 0 without).
    pub evidence_answers: u64,
    /// Adopted by `build`'s rule (none below [`infer::MIN_ANSWERS`] answers it makes a
    /// difference to).
    pub adopted: Vec<String>,
    /// Every convention some answer spoke to, with its tally
    /// (`"completion count = rebuilt − 1 in 3 of 3"`).
    pub shown: Vec<String>,
    /// Why nothing shown was adopted, when the answers are too few.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below_minimum: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub call_id_forms: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasoning_fields: BTreeMap<&'static str, u64>,
}

/// Tally the answers' evidence and apply `build`'s rule.
pub fn found<'a>(answers: impl IntoIterator<Item = &'a AnswerEvidence>) -> ConventionsFound {
    let mut group = GroupEvidence::default();
    for a in answers {
        group.add(&a.evidence);
        if let Some(form) = a.id_form {
            *group.id_forms.entry(form).or_default() += 1;
        }
        if let Some(field) = a.reasoning_field {
            *group.reasoning_fields.entry(field).or_default() += 1;
        }
    }
    let adopted: Vec<String> = group
        .adopted()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut shown = Vec::new();
    let mut short = false;
    for (index, convention) in CONVENTIONS.into_iter().enumerate() {
        let tally = group.tallies[index];
        if tally.differs() == 0 {
            continue;
        }
        short |= tally.differs() < infer::MIN_ANSWERS && tally.explains > 0;
        shown.push(format!("{}: {}", convention.name(), group.describe(index)));
    }
    let below_minimum = short.then(|| {
        format!(
            "{} answer(s) read: a convention is adopted on at least {} answers it makes a difference to, so none shown here is (a run's own answers settle it at build)",
            group.evaluated,
            infer::MIN_ANSWERS
        )
    });
    ConventionsFound {
        evidence_answers: group.evaluated,
        adopted,
        shown,
        below_minimum,
        call_id_forms: group.id_forms,
        reasoning_fields: group.reasoning_fields,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(first: Evidence) -> AnswerEvidence {
        let mut evidence = [Evidence::Silent; CONVENTIONS.len()];
        evidence[0] = first;
        AnswerEvidence {
            evidence,
            id_form: None,
            reasoning_field: Some("reasoning"),
        }
    }

    #[test]
    fn a_few_answers_show_a_convention_without_adopting_it() {
        let few: Vec<AnswerEvidence> = (0..3).map(|_| answer(Evidence::Explains)).collect();
        let f = found(&few);
        assert_eq!(f.evidence_answers, 3);
        assert!(f.adopted.is_empty(), "{f:?}");
        assert_eq!(f.shown.len(), 1, "{f:?}");
        assert!(f.shown[0].ends_with("in 3 of 3"), "{f:?}");
        assert!(f.below_minimum.is_some(), "{f:?}");
        assert_eq!(f.reasoning_fields.get("reasoning"), Some(&3));

        let enough: Vec<AnswerEvidence> = (0..infer::MIN_ANSWERS)
            .map(|_| answer(Evidence::Explains))
            .collect();
        let f = found(&enough);
        assert_eq!(f.adopted, [CONVENTIONS[0].name()], "{f:?}");
        assert!(f.below_minimum.is_none(), "{f:?}");
    }
}
