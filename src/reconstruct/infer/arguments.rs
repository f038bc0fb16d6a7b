//! Tool-call arguments re-serialized compactly by the provider.

use serde_json::Value;

use crate::completion::{Arguments, Completion};
use crate::model::Profile;
use crate::pyjson::{dumps_json, DumpOptions};
use crate::reconstruct::fidelity::Reason;
use crate::reconstruct::Reconstruction;

use super::{doubt, Answer, Convention, Evidence, Inverted};

/// What one call's arguments show: `None` where they say nothing (not JSON, or no separator
/// whose spacing could differ), else whether they are spelled compactly.
fn compact(arguments: &Arguments) -> Option<bool> {
    let Arguments::Raw(text) = arguments else {
        return None;
    };
    let text = text.trim();
    let value: Value = serde_json::from_str(text).ok()?;
    let spaced = dumps_json(&value, &DumpOptions::default());
    let compact = |ensure_ascii| {
        let options = DumpOptions {
            ensure_ascii,
            separators: Some((",".to_string(), ":".to_string())),
            ..DumpOptions::default()
        };
        dumps_json(&value, &options)
    };
    if spaced == compact(false) {
        return None; // `{}`, `[]`, a scalar: nothing to tell
    }
    Some(text == compact(false) || text == compact(true))
}

/// What an answer's calls show: `Some(true)` every telling call compact, `Some(false)` one
/// spelled otherwise, `None` nothing told.
fn calls_compact(completion: &Completion) -> Option<bool> {
    let mut told = None;
    for call in &completion.tool_calls {
        match compact(&call.arguments) {
            Some(false) => return Some(false),
            Some(true) => told = Some(true),
            None => {}
        }
    }
    told
}

/// The provider parses each call's arguments and writes them back compactly, `json.dumps` with
/// `separators=(",", ":")`, non-ASCII escaped or not (Groq, Together: `{"a":2,"b":3}` where the
/// model wrote `{"a": 2, "b": 3}`). The model's own spelling is lost: the inverse reads the
/// arguments as their JSON value, and every spelling of it (each separator with or without its
/// space, non-ASCII escaped or not, `indent=2`: `reconstruct/spellings.rs`) is a candidate the
/// count decides between. Where one spelling alone meets the count the sample may be exact,
/// settled by `usage.completion_tokens` (its warning says so); where several do it is
/// `ambiguous`. An answer with arguments spelled otherwise (`": "`) contradicts it.
pub struct CompactsArguments;

impl Convention for CompactsArguments {
    fn name(&self) -> &'static str {
        "compacts_arguments"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderCompactsArguments
    }
    fn describe(&self) -> &'static str {
        "tool-call arguments compact JSON, the model's spelling settled by the count"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none() && calls_compact(a.completion) == Some(true)
    }
    /// Arguments spelled otherwise than compactly contradict it.
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        let spaced = a.completion.completion_token_ids.is_none()
            && calls_compact(a.completion) == Some(false);
        spaced.then_some(Evidence::Contradicts)
    }
    fn inverse(&self, a: &mut Inverted) {
        for call in &mut a.completion.tool_calls {
            if let Arguments::Raw(text) = &call.arguments {
                if let Ok(value) = serde_json::from_str::<Value>(text.trim()) {
                    call.arguments = Arguments::Object(value);
                }
            }
        }
        a.options.arguments_reserialized = true;
    }
    fn after(&self, _profile: &Profile, r: &mut Reconstruction) -> bool {
        if r.fidelity.class.is_exact() {
            r.warnings.push(
                "the provider re-serialized the tool-call arguments; of every spelling of their value, one alone meets usage.completion_tokens: that spelling was taken as the model's"
                    .to_string(),
            );
        }
        true
    }
    /// A compact answer is explained unless the reading under the convention leaves more
    /// doubt: the default reading takes a compact spelling as the model's, which meets the
    /// count only where the model wrote it so.
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        if doubt(conventional) <= doubt(default) {
            Evidence::Explains
        } else {
            Evidence::Contradicts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Arguments {
        Arguments::Raw(text.to_string())
    }

    #[test]
    fn compact_spellings_are_told_from_the_models() {
        // tests/data/provider_conventions: Groq escapes non-ASCII, Together does not.
        assert_eq!(compact(&raw(r#"{"weight":70,"height":1.75}"#)), Some(true));
        assert_eq!(
            compact(&raw(r#"{"location":"S\u00e3o Paulo"}"#)),
            Some(true)
        );
        assert_eq!(compact(&raw(r#"{"location":"São Paulo"}"#)), Some(true));
        // Fireworks passes the model's spelling.
        assert_eq!(
            compact(&raw(r#"{"weight": 70, "height": 1.75}"#)),
            Some(false)
        );
        // Nothing to tell.
        assert_eq!(compact(&raw("{}")), None);
        assert_eq!(compact(&raw("not json")), None);
    }
}
