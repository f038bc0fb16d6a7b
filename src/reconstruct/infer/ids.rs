//! The provider's form of the model's tool-call ids.
//!
//! Kimi writes each call's id into its token stream as `functions.NAME:N`, N counted over the
//! conversation (`model/family/kimi.rs`). Providers pass it on in their own form
//! (tests/data/provider_conventions): as written, without the `functions.` prefix (`NAME:N`),
//! as the index alone (`"0"`), or replaced by an id of their own (`call_…`, which says nothing
//! of the model's: that answer stays `lossy`, `reconstruct/classify.rs`). The two forms that keep
//! the name and the index are conventions here: their inverse writes the model's id back.

use crate::completion::{Completion, ToolCall};
use crate::model::Profile;
use crate::reconstruct::fidelity::{FidelityClass, Reason};
use crate::reconstruct::turn::earlier_tool_calls;
use crate::reconstruct::Reconstruction;

use super::{doubt, Answer, Convention, Evidence, Inverted};

/// The model's id for a call of `profile`'s family whose id was sent as `sent`, read by `index`
/// (the name and N it keeps); `None` where the form does not match or it changes nothing.
fn restored(
    profile: &Profile,
    call: &ToolCall,
    index: impl Fn(&str, &str) -> Option<usize>,
) -> Option<String> {
    let sent = call.id.as_deref()?;
    let n = index(sent, &call.name)?;
    let native = profile.native_tool_call_id(&call.name, n)?;
    (native != sent).then_some(native)
}

/// Every call's restored id (`None`: no calls, or a call whose id is not of the form).
fn restore_all(
    profile: &Profile,
    completion: &Completion,
    index: impl Fn(&str, &str) -> Option<usize> + Copy,
) -> Option<Vec<String>> {
    if completion.tool_calls.is_empty() {
        return None;
    }
    completion
        .tool_calls
        .iter()
        .map(|call| restored(profile, call, index))
        .collect()
}

fn digits(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `NAME:N` with the call's own name: N.
fn without_prefix(sent: &str, name: &str) -> Option<usize> {
    let (head, n) = sent.rsplit_once(':')?;
    (head == name).then_some(())?;
    digits(n)
}

/// `N` alone.
fn index_only(sent: &str, _name: &str) -> Option<usize> {
    digits(sent)
}

/// An answer with ids of the form is explained unless the reading under the convention leaves
/// more doubt than the default. The ids alone are the mark: behind a shape that strips the
/// arguments' whitespace the count is often met by other whitespace either way (two ambiguous
/// readings), and then the form decides.
fn form_evidence(default: &Reconstruction, conventional: &Reconstruction) -> Evidence {
    if doubt(conventional) <= doubt(default) {
        Evidence::Explains
    } else {
        Evidence::Contradicts
    }
}

fn write_back(a: &mut Inverted, ids: Vec<String>) {
    for (call, id) in a.completion.tool_calls.iter_mut().zip(ids) {
        call.id = Some(id);
    }
}

/// Ids sent as `NAME:N` (Moonshot AI, AtlasCloud): the model's `functions.NAME:N` without its
/// prefix. The name and N are the model's, so the id is restored exactly; the count settles it
/// (the prefix is tokens of the completion), so an answer whose model wrote `NAME:N` itself
/// reads with less doubt by default and contradicts it.
pub struct IdsWithoutPrefix;

impl Convention for IdsWithoutPrefix {
    fn name(&self) -> &'static str {
        "ids_without_prefix"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderIdsWithoutPrefix
    }
    fn describe(&self) -> &'static str {
        "tool-call ids NAME:N read as the model's functions.NAME:N"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && restore_all(a.profile, a.completion, without_prefix).is_some()
    }
    fn inverse(&self, a: &mut Inverted) {
        if let Some(ids) = restore_all(a.profile, &a.completion, without_prefix) {
            write_back(a, ids);
        }
    }
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        form_evidence(default, conventional)
    }
}

/// Ids sent as the index alone (`"0"`, `"1"`: DeepInfra): the model's `functions.NAME:N` with
/// the call's name and that N. The count cannot tell one index from another (each is one
/// digit token), so the convention holds only where the index is the one the model numbers
/// with (the conversation's earlier calls plus the call's place): an answer whose index is
/// another (numbered per answer in a conversation with earlier calls) shows the provider does
/// not pass the model's N and contradicts it, and such an answer is rebuilt by default
/// (renumbered, `lossy`).
pub struct IdsIndexOnly;

impl IdsIndexOnly {
    /// The restored ids, where every call's index is the model's own numbering.
    fn ids(profile: &Profile, completion: &Completion, earlier: usize) -> Option<Vec<String>> {
        let numbered = completion
            .tool_calls
            .iter()
            .enumerate()
            .all(|(i, call)| call.id.as_deref().and_then(digits) == Some(earlier + i));
        numbered
            .then(|| restore_all(profile, completion, index_only))
            .flatten()
    }

    fn every_id_an_index(completion: &Completion) -> bool {
        !completion.tool_calls.is_empty()
            && completion
                .tool_calls
                .iter()
                .all(|call| call.id.as_deref().and_then(digits).is_some())
    }
}

impl Convention for IdsIndexOnly {
    fn name(&self) -> &'static str {
        "ids_index_only"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderIdsIndexOnly
    }
    fn describe(&self) -> &'static str {
        "tool-call ids N read as the model's functions.NAME:N, N the conversation's call index"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && Self::ids(a.profile, a.completion, earlier_tool_calls(a.request)).is_some()
    }
    /// Indices that are not the model's numbering contradict it.
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        let misnumbered = a.completion.completion_token_ids.is_none()
            && Self::every_id_an_index(a.completion)
            && !self.applies(a);
        misnumbered.then_some(Evidence::Contradicts)
    }
    fn inverse(&self, a: &mut Inverted) {
        let earlier = earlier_tool_calls(&a.request);
        if let Some(ids) = Self::ids(a.profile, &a.completion, earlier) {
            write_back(a, ids);
        }
    }
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        form_evidence(default, conventional)
    }
}

/// Ids the provider mints itself (`call_…`: Together): the model's id cannot be read back, only
/// the calls' order. The inverse writes the family's id numbered over the conversation (what
/// the model writes when it follows its template) in place of each, so that a shape that checks
/// the ids it passes on compares the model's form, and every sample rebuilt under it is at
/// most `lossy` with the reason the server rewrote the ids: nothing settles the number.
pub struct IdsMinted;

impl IdsMinted {
    fn renumbered(
        profile: &Profile,
        completion: &Completion,
        earlier: usize,
    ) -> Option<Vec<String>> {
        completion
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| profile.native_tool_call_id(&call.name, earlier + i))
            .collect()
    }
}

impl Convention for IdsMinted {
    fn name(&self) -> &'static str {
        "ids_minted"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderIdsMinted
    }
    fn describe(&self) -> &'static str {
        "tool-call ids minted by the provider, the model's not readable"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && id_form(a.profile, a.completion) == Some("other")
            && a.profile.native_tool_call_id("f", 0).is_some()
    }
    /// An answer with the model's own ids (or a form that keeps its number) contradicts it.
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        let kept = a.completion.completion_token_ids.is_none()
            && id_form(a.profile, a.completion).is_some_and(|form| form != "other");
        kept.then_some(Evidence::Contradicts)
    }
    fn inverse(&self, a: &mut Inverted) {
        let earlier = earlier_tool_calls(&a.request);
        if let Some(ids) = Self::renumbered(a.profile, &a.completion, earlier) {
            write_back(a, ids);
        }
    }
    fn after(&self, _profile: &Profile, r: &mut Reconstruction) -> bool {
        r.fidelity.at_most(FidelityClass::Lossy);
        r.fidelity.because(Reason::ServerRewritesToolCallIds);
        r.warnings.push(
            "lossy: the provider mints its own tool-call ids; they were rebuilt as functions.NAME:N numbered over the conversation, which the model may not have written"
                .to_string(),
        );
        true
    }
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        form_evidence(default, conventional)
    }
}

/// The form of an answer's tool-call ids, for the provider's report: `functions.NAME:N` (the
/// family's own), `NAME:N`, `N`, or `other` (minted, `call_…`); `None` without calls.
pub fn id_form(profile: &Profile, completion: &Completion) -> Option<&'static str> {
    let calls = &completion.tool_calls;
    if calls.is_empty() {
        return None;
    }
    let native = calls.iter().all(|call| {
        let id = call.id.as_deref().unwrap_or_default();
        let n = id.rsplit_once(':').and_then(|(_, n)| digits(n));
        n.and_then(|n| profile.native_tool_call_id(&call.name, n))
            .is_some_and(|native| native == id)
    });
    let all = |form: fn(&str, &str) -> Option<usize>| {
        calls.iter().all(|call| {
            call.id
                .as_deref()
                .is_some_and(|id| form(id, &call.name).is_some())
        })
    };
    Some(if native {
        "functions.NAME:N"
    } else if all(without_prefix) {
        "NAME:N"
    } else if all(index_only) {
        "N"
    } else {
        "other"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_read_the_name_and_index() {
        // tests/data/provider_conventions: Moonshot AI sends `get_news:0`, DeepInfra `0`.
        assert_eq!(without_prefix("get_news:0", "get_news"), Some(0));
        assert_eq!(without_prefix("get_news:12", "get_news"), Some(12));
        assert_eq!(without_prefix("functions.get_news:0", "get_news"), None);
        assert_eq!(without_prefix("other:0", "get_news"), None);
        assert_eq!(without_prefix("get_news:", "get_news"), None);
        assert_eq!(index_only("1", "get_news"), Some(1));
        assert_eq!(index_only("call_0", "get_news"), None);
        assert_eq!(index_only("", "get_news"), None);
    }
}
