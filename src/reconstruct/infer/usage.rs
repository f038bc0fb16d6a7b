//! `usage.completion_tokens` without the end token.

use crate::reconstruct::fidelity::Reason;

use super::{counted, Answer, Convention, Inverted};

/// `usage.completion_tokens` leaves out the end token (DeepInfra, SiliconFlow: every finished
/// answer one short of the rebuild). A cut answer has no end token: nothing to leave out.
pub struct UsageExcludesEndToken;

impl Convention for UsageExcludesEndToken {
    fn name(&self) -> &'static str {
        "usage_excludes_end_token"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderUsageExcludesEndToken
    }
    fn describe(&self) -> &'static str {
        "completion count = rebuilt − 1"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && counted(a.completion).is_some()
            && a.completion.finish_reason.as_deref() != Some("length")
    }
    fn count_shift(&self) -> Option<i64> {
        Some(-1)
    }
    fn inverse(&self, a: &mut Inverted) {
        if let Some(n) = a
            .completion
            .usage
            .as_mut()
            .and_then(|u| u.completion_tokens.as_mut())
        {
            *n += 1;
        }
    }
}
