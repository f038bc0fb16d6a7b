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
//!   among answers with `finish_reason == "tool_calls"`, those whose calls are present and all
//!   pass `validate_tool_call` ([`super::schema::k2vv_call_valid`]). Counted over requests that
//!   carry the `tools` parameter, as every K2-Vendor-Verifier request does.
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

/// ToolCall-Schema Accuracy counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchemaAccuracy {
    /// Answers to requests with the `tools` parameter.
    pub answers: u64,
    pub count_finish_reason_tool_calls: u64,
    pub count_successful_tool_call: u64,
    /// `None` when no answer ended with `tool_calls`.
    pub schema_accuracy: Option<f64>,
}

impl SchemaAccuracy {
    pub fn add(&mut self, finish_tool_calls: bool, calls_valid: bool) {
        self.answers += 1;
        if finish_tool_calls {
            self.count_finish_reason_tool_calls += 1;
            if calls_valid {
                self.count_successful_tool_call += 1;
            }
        }
    }

    pub fn finish(&mut self) {
        self.schema_accuracy = ratio(
            self.count_successful_tool_call,
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
        s.add(false, false);
        s.finish();
        assert_eq!(s.schema_accuracy, None);
    }
}
