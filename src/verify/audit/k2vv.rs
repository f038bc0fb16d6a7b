//! K2-Vendor-Verifier's two metrics and thresholds (`MoonshotAI/K2-Vendor-Verifier` at
//! `0bc5061`: `tool_calls_eval.py` `compute_summary`, README "Evaluation Metrics"):
//!
//! - **ToolCall-Trigger Similarity** `tool_call_f1`, against a reference run on the same prompts:
//!   TP = both answers end with `finish_reason == "tool_calls"`; FP = ours does, the reference's
//!   does not (`stop` or anything else); FN = the reverse; TN = neither. precision = TP/(TP+FP),
//!   recall = TP/(TP+FN), F1 = 2·P·R/(P+R). Only prompts answered successfully in both runs are
//!   compared (the rest are counted as unpaired). A zero denominator leaves the figure undefined
//!   (`null`), never 0 or 1.
//! - **ToolCall-Schema Accuracy** = `count_successful_tool_call / count_finish_reason_tool_calls`:
//!   among answers with `finish_reason == "tool_calls"`, those for which
//!   `all(validate_tool_call(tc, tools) for tc in tool_calls)` holds
//!   ([`super::schema::k2vv_call_valid`]), an answer without calls included (`all([])` is
//!   true). Beside it, the same count with calls required ([`SchemaAccuracy`]). Counted over
//!   requests that carry the `tools` parameter, as every K2-Vendor-Verifier request does, and
//!   separately, with the same definitions, over requests whose tools are declared only in the
//!   system prompt (their schemas read from the prompt).
//! - Thresholds, from repeated official runs: F1 ≥ 80% for K2-0905 (temperature 0.6), ≥ 73% for
//!   K2-Thinking (temperature 1.0); official schema accuracy is 100%. K2.5 and other families have
//!   no published threshold: the K2-Thinking one is used for thinking families, the K2-0905 one
//!   otherwise, and the report says which. Each family's file says which is its own
//!   ([`FamilySpec::k2vv`](crate::model::family::FamilySpec::k2vv)).

use serde::Serialize;

use crate::model::family::Family;

/// The thresholds a provider is held to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    pub tool_call_f1_min: f64,
    pub schema_accuracy_min: f64,
    /// Which published threshold this is.
    pub basis: String,
}

impl Thresholds {
    pub fn for_family(family: Family) -> Thresholds {
        let k2vv = family.spec().k2vv;
        Thresholds {
            tool_call_f1_min: k2vv.tool_call_f1_min,
            schema_accuracy_min: 1.0,
            basis: format!(
                "K2-Vendor-Verifier: F1 {}; schema accuracy: official 100%",
                k2vv.basis
            ),
        }
    }
}

/// ToolCall-Schema Accuracy counts, two ways over the same answers.
///
/// K2-Vendor-Verifier's `tool_calls_valid = all(validate_tool_call(tc, tools) for tc in
/// tool_calls)` is true for an answer that ends with `tool_calls` and carries no calls (`all()`
/// over an empty list): [`schema_accuracy`](Self::schema_accuracy) counts such an answer as a
/// success, as K2-Vendor-Verifier does; [`schema_accuracy_calls_required`](
/// Self::schema_accuracy_calls_required) counts it as a failure. (Run live through
/// openai-python, whose `model_dump()` writes `"tool_calls": null` when there are none,
/// K2-Vendor-Verifier's `all()` over `None` raises and the answer leaves its summary altogether;
/// `count_finish_reason_tool_calls_without_calls` gives that figure too.)
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchemaAccuracy {
    /// Answers in this group (requests whose tools are declared where this figure looks).
    pub answers: u64,
    pub count_finish_reason_tool_calls: u64,
    /// Of those, answers whose calls all pass `validate_tool_call`, none counting as all.
    pub count_successful_tool_call: u64,
    /// `count_successful_tool_call / count_finish_reason_tool_calls`, K2-Vendor-Verifier's
    /// definition; `None` when no answer ended with `tool_calls`.
    pub schema_accuracy: Option<f64>,
    /// Answers ending with `tool_calls` that carry no calls.
    pub count_finish_reason_tool_calls_without_calls: u64,
    /// Answers ending with `tool_calls` with at least one call, every one valid.
    pub count_successful_tool_call_with_calls: u64,
    /// `count_successful_tool_call_with_calls / count_finish_reason_tool_calls`: an answer that
    /// says `tool_calls` and has none fails.
    pub schema_accuracy_calls_required: Option<f64>,
}

impl SchemaAccuracy {
    /// One answer: whether it ended with `tool_calls`, how many calls it has, and whether
    /// `validate_tool_call` passed every one (true when there are none).
    pub fn add(&mut self, finish_tool_calls: bool, calls: usize, all_valid: bool) {
        self.answers += 1;
        if !finish_tool_calls {
            return;
        }
        self.count_finish_reason_tool_calls += 1;
        if calls == 0 {
            self.count_finish_reason_tool_calls_without_calls += 1;
        }
        if all_valid {
            self.count_successful_tool_call += 1;
            if calls > 0 {
                self.count_successful_tool_call_with_calls += 1;
            }
        }
    }

    pub fn finish(&mut self) {
        self.schema_accuracy = ratio(
            self.count_successful_tool_call,
            self.count_finish_reason_tool_calls,
        );
        self.schema_accuracy_calls_required = ratio(
            self.count_successful_tool_call_with_calls,
            self.count_finish_reason_tool_calls,
        );
    }
}

/// ToolCall-Trigger Similarity counts against a reference run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TriggerSimilarity {
    pub compared: u64,
    pub tp: u64,
    pub fp: u64,
    #[serde(rename = "fn")]
    pub fn_: u64,
    pub tn: u64,
    pub tool_call_precision: Option<f64>,
    pub tool_call_recall: Option<f64>,
    pub tool_call_f1: Option<f64>,
}

impl TriggerSimilarity {
    /// One prompt: whether our answer and the reference's ended with `tool_calls`.
    pub fn add(&mut self, ours: bool, reference: bool) {
        self.compared += 1;
        match (ours, reference) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    pub fn finish(&mut self) {
        let p = ratio(self.tp, self.tp + self.fp);
        let r = ratio(self.tp, self.tp + self.fn_);
        self.tool_call_precision = p;
        self.tool_call_recall = r;
        self.tool_call_f1 = match (p, r) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_figures_stay_undefined() {
        let mut t = TriggerSimilarity::default();
        t.add(false, false);
        t.finish();
        assert_eq!(t.tool_call_f1, None);
        let mut s = SchemaAccuracy::default();
        s.add(false, 0, true);
        s.finish();
        assert_eq!(s.schema_accuracy, None);
        assert_eq!(s.schema_accuracy_calls_required, None);
    }

    /// `all([])` is true: K2-Vendor-Verifier counts a `tool_calls` answer without calls as valid.
    #[test]
    fn no_calls_count_as_valid_for_k2vv_only() {
        let mut s = SchemaAccuracy::default();
        s.add(true, 0, true);
        s.add(true, 2, true);
        s.add(true, 1, false);
        s.add(false, 1, true);
        s.finish();
        assert_eq!(s.count_finish_reason_tool_calls, 3);
        assert_eq!(s.count_successful_tool_call, 2);
        assert_eq!(s.count_successful_tool_call_with_calls, 1);
        assert_eq!(s.count_finish_reason_tool_calls_without_calls, 1);
        assert_eq!(s.schema_accuracy, Some(2.0 / 3.0));
        assert_eq!(s.schema_accuracy_calls_required, Some(1.0 / 3.0));
    }
}
