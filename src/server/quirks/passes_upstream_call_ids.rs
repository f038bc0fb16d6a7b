//! The tool-call ids are the upstream provider's, passed through as it sent them (OpenRouter,
//! measured on real traffic: `functions.NAME:N`, `NAME:N`, `"0"` or `call_…` by provider; it
//! mints none of its own). A Kimi upstream that passes the model's ids on sends the model's id
//! text, so the forward answer keeps it; the form another upstream gives them is that
//! provider's convention, not this shape's, so an answer's ids are not checked against the
//! model's here. Reading back: an id in the family's native form is taken as the model's text;
//! any other form leaves the ids rebuilt by number (`lossy`, the classification's
//! `server_rewrites_tool_call_ids`), unless an id-form convention inferred for the provider
//! says how its ids were made.

use crate::server::quirk::{Evidence, Quirk, Seen};
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct PassesUpstreamCallIds;

impl Quirk for PassesUpstreamCallIds {
    fn name(&self) -> &'static str {
        "passes_upstream_call_ids"
    }

    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, parsed: &mut Parsed) {
        // The model's id text stays (what a passing upstream sends); another upstream's form
        // is not this shape's to check.
        parsed.call_ids_checked = false;
    }

    /// Any form of id passes through, so none contradicts it, and none is OpenRouter's own.
    fn evidence(&self, _seen: &Seen) -> Evidence {
        Evidence::Silent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::quirk::CallIdForm;
    use serde_json::json;

    #[test]
    fn every_id_form_passes_and_the_model_s_id_text_stays() {
        let body = json!({});
        for form in [None, Some(CallIdForm::Native), Some(CallIdForm::Minted)] {
            let seen = Seen {
                body: &body,
                answer: None,
                stream: false,
                call_ids: form,
                forward_checked: false,
            };
            assert_eq!(PassesUpstreamCallIds.evidence(&seen), Evidence::Silent);
        }
        assert_eq!(PassesUpstreamCallIds.reason(), None);
    }
}
