//! Whitespace stripped at one boundary of the text fields.
//!
//! Some stacks strip the whitespace at the start or end of the reasoning or the content (vLLM's
//! Kimi parser the reasoning's end; others trim the content). A stripped boundary shows nothing
//! in the answer, only in the count: the model's `"\n\n"` before the tool calls, stripped, leaves
//! the count one token above the text's. So the evidence is the count (rebuilt under the
//! convention, whitespace tried at the boundary, the count meets it where the default reading
//! does not) and every answer whose text at that boundary keeps its whitespace (a stripping stack
//! never sends that: it contradicts). Which whitespace it was the count often cannot settle
//! (`" "`, `"\n"` and `"\n\n"` are one token each): such a sample stays `ambiguous`, naming the
//! boundary (`provider_strips_content_end`, …).

use crate::completion::Completion;
use crate::model::family::Syntax;
use crate::reconstruct::fidelity::Reason;
use crate::reconstruct::Reconstruction;
use crate::server::quirks::{with_stripped, Boundary};

use super::{doubt, Answer, Convention, Evidence, Inverted};

/// The stack strips the whitespace at `boundary`.
pub struct StripsWhitespace {
    pub boundary: Boundary,
}

pub const STRIPS_REASONING_START: StripsWhitespace = StripsWhitespace {
    boundary: Boundary::ReasoningStart,
};
pub const STRIPS_REASONING_END: StripsWhitespace = StripsWhitespace {
    boundary: Boundary::ReasoningEnd,
};
pub const STRIPS_CONTENT_START: StripsWhitespace = StripsWhitespace {
    boundary: Boundary::ContentStart,
};
pub const STRIPS_CONTENT_END_BEFORE_CALLS: StripsWhitespace = StripsWhitespace {
    boundary: Boundary::ContentEndBeforeCalls,
};
pub const STRIPS_CONTENT_END: StripsWhitespace = StripsWhitespace {
    boundary: Boundary::ContentEnd,
};

/// The answer's text at `boundary`, where it has that boundary: the field's start or end.
fn edge(c: &Completion, boundary: Boundary) -> Option<char> {
    let has_calls = !c.tool_calls.is_empty();
    let field = match boundary {
        Boundary::ReasoningStart | Boundary::ReasoningEnd => c.reasoning.as_deref(),
        Boundary::ContentEndBeforeCalls if !has_calls => None,
        Boundary::ContentEnd if has_calls => None,
        _ => c.content.as_deref(),
    }?;
    match boundary {
        Boundary::ReasoningStart | Boundary::ContentStart => field.chars().next(),
        _ => field.chars().next_back(),
    }
}

impl StripsWhitespace {
    fn readable(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && a.profile.family.spec().syntax == Some(Syntax::Kimi)
    }
}

impl Convention for StripsWhitespace {
    fn name(&self) -> &'static str {
        match self.boundary {
            Boundary::ReasoningStart => "strips_reasoning_start",
            Boundary::ReasoningEnd => "strips_reasoning_end",
            Boundary::ContentStart => "strips_content_start",
            Boundary::ContentEndBeforeCalls => "strips_content_end_before_calls",
            Boundary::ContentEnd => "strips_content_end",
        }
    }
    fn reason(&self) -> Reason {
        match self.boundary {
            Boundary::ReasoningStart => Reason::ProviderStripsReasoningStart,
            Boundary::ReasoningEnd => Reason::ProviderStripsReasoningEnd,
            Boundary::ContentStart => Reason::ProviderStripsContentStart,
            Boundary::ContentEndBeforeCalls => Reason::ProviderStripsContentEndBeforeCalls,
            Boundary::ContentEnd => Reason::ProviderStripsContentEnd,
        }
    }
    fn describe(&self) -> &'static str {
        match self.boundary {
            Boundary::ReasoningStart => "whitespace at the reasoning's start met the count",
            Boundary::ReasoningEnd => "whitespace at the reasoning's end met the count",
            Boundary::ContentStart => "whitespace at the content's start met the count",
            Boundary::ContentEndBeforeCalls => {
                "whitespace at the content's end before the calls met the count"
            }
            Boundary::ContentEnd => "whitespace at the content's end met the count",
        }
    }
    /// The answer has the boundary, with no whitespace there (which the stack may have taken).
    fn applies(&self, a: &Answer) -> bool {
        self.readable(a) && edge(a.completion, self.boundary).is_some_and(|c| !c.is_whitespace())
    }
    /// Whitespace kept at the boundary: a stack that strips it never sends that.
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        let kept =
            self.readable(a) && edge(a.completion, self.boundary).is_some_and(char::is_whitespace);
        kept.then_some(Evidence::Contradicts)
    }
    /// The default reading met the count with no whitespace at the boundary: a stripping stack
    /// would have sent the same, so the answer cannot tell.
    fn silent_where_default_is_exact(&self) -> bool {
        true
    }
    fn inverse(&self, a: &mut Inverted) {
        a.shape = with_stripped(a.shape, self.boundary);
    }
    /// Where the rebuild under it equals the default one, the answer says nothing of it (the
    /// model wrote no whitespace there); a prompt count the default reading disagrees with
    /// leaves a completion one token over to another convention (a generated `<think>`).
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        if conventional.completion_ids == default.completion_ids {
            return Evidence::Silent;
        }
        if default
            .fidelity
            .reasons
            .contains(&Reason::PromptTokensDisagree)
        {
            return Evidence::Unexplained;
        }
        match doubt(conventional).cmp(&doubt(default)) {
            std::cmp::Ordering::Less => Evidence::Explains,
            std::cmp::Ordering::Greater => Evidence::Contradicts,
            std::cmp::Ordering::Equal => Evidence::Unexplained,
        }
    }
}
