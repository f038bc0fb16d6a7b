//! A provider's conventions, inferred from the run's own answers.
//!
//! Behind OpenRouter (or an undeclared server) each provider answers from its own stack, and
//! some stacks count or shape an answer in a way that reads back as other ids than the model's
//! (tests/data/provider_conventions): `usage` without the end token (`usage.rs`), a template
//! that lets the model generate `<think>` (`think.rs`), spaces around added tokens
//! (`spacing.rs`), tool-call ids in another form (`ids.rs`), arguments re-serialized compactly
//! (`arguments.rs`), whitespace stripped at a boundary of the text fields (`strips.rs`); the
//! field that carries the reasoning (`reasoning.rs`: recorded, nothing to invert, the answer is
//! read whichever it is); and what a stack shows it does not do (no spaces, the opener
//! prompted: `negative.rs`), which lifts the doubts `upstream.rs` raises for any unnamed stack.
//! Each such [`Convention`] is one type: its name, its inverse (applied around
//! [`reconstruct_parsed`], which stays a black box), what one answer shows of it ([`Evidence`])
//! and the fidelity reason a sample rebuilt under it carries.
//!
//! [`GroupEvidence`] tallies the evidence of one provider's answers; [`GroupEvidence::adopted`]
//! adopts a convention only when it explains at least [`SHARE`] of the answers where it makes a
//! difference, contradicts none that the default reading explains, and at least
//! [`MIN_ANSWERS`] answers show it. [`rebuild`] then rebuilds an answer under the adopted ones.

use serde::{Deserialize, Serialize};

use crate::completion::Completion;
use crate::model::Profile;
use crate::server::ServerShape;

use super::fidelity::{FidelityClass, Reason};
use super::ReconstructOptions;
use super::{reconstruct_parsed, ExchangeRequest, ReconstructError, Reconstruction};

mod arguments;
mod ids;
mod negative;
mod reasoning;
mod shape;
mod spacing;
mod strips;
mod think;
mod usage;

pub use arguments::CompactsArguments;
pub use ids::{id_form, IdsIndexOnly, IdsMinted, IdsWithoutPrefix};
pub use negative::{NoSpacesSpecialTokens, PromptsThink};
pub use reasoning::reasoning_field;
pub use shape::{KnownShape, KNOWN_SHAPES};
pub use spacing::SpacesSpecialTokens;
pub use strips::{
    StripsWhitespace, STRIPS_CONTENT_END, STRIPS_CONTENT_END_BEFORE_CALLS, STRIPS_CONTENT_START,
    STRIPS_REASONING_END, STRIPS_REASONING_START,
};
pub use think::GeneratesThink;
pub use usage::UsageExcludesEndToken;

/// Fewer answers that a convention makes a difference to than this, and it is not adopted.
/// Eight: each convention here moves the count or the text of every answer it applies to, so
/// eight answers that all agree leave little room for chance (a provider that counted the end
/// token would have to be off by exactly one, in the same direction, eight times), while a
/// provider seen only a handful of times keeps the default reading, which never silently
/// trusts the convention.
pub const MIN_ANSWERS: u64 = 8;

/// The share of the answers a convention makes a difference to that it must explain.
pub const SHARE: f64 = 0.9;

/// What one answer shows of a convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The convention changes nothing here.
    Silent,
    /// Read under the convention, the answer leaves less doubt than read by default (or, the
    /// two tied, its count is the convention's).
    Explains,
    /// Neither reading is the better one.
    Unexplained,
    /// The default reading leaves less doubt (or, tied, the count is the default's; or the
    /// answer shows what a stack with the convention never sends).
    Contradicts,
}

/// One answer and how it is read by default.
#[derive(Clone, Copy)]
pub struct Answer<'a> {
    pub profile: &'a Profile,
    pub request: &'a ExchangeRequest,
    pub completion: &'a Completion,
    pub options: &'a ReconstructOptions,
}

/// What a convention's inverse may change before the rebuild.
pub struct Inverted<'a> {
    /// The answer's profile (read only: the family's id form, its markers).
    pub profile: &'a Profile,
    pub request: ExchangeRequest,
    pub completion: Completion,
    pub options: ReconstructOptions,
    /// The shape the rebuild checks candidates against (the options' own unless changed).
    pub shape: &'static ServerShape,
}

/// One convention of a provider's stack.
pub trait Convention: Send + Sync {
    /// A stable snake_case name (`build.json`).
    fn name(&self) -> &'static str;
    /// The reason a sample rebuilt under it carries.
    fn reason(&self) -> Reason;
    /// What its evidence counts, for `build.json` (`"completion count = rebuilt − 1"`).
    fn describe(&self) -> &'static str;
    /// Whether it changes how this answer is read (cheap: no rebuild).
    fn applies(&self, answer: &Answer) -> bool;
    /// Undo it on the answer before the rebuild.
    fn inverse(&self, answer: &mut Inverted);
    /// What the answer shows without a rebuild, where it does (a stack with the convention
    /// never sends it, or always does); `None`: the rebuilds tell ([`Convention::evidence`]).
    fn shown(&self, _answer: &Answer) -> Option<Evidence> {
        None
    }
    /// How the count it explains differs from the count of the answer's most likely reading
    /// (`reported − natural`), for a convention about the count: when both readings leave the
    /// same doubt (a count one off met by another whitespace split), the most likely reading's
    /// length decides ([`evidence_of`]).
    fn count_shift(&self) -> Option<i64> {
        None
    }
    /// Whether the sample rebuilt under it names it: where it changed the reading (a
    /// convention that only lifts a doubt names itself where that doubt would have been raised).
    fn names(&self, _answer: &Answer, _rebuilt: &Reconstruction) -> bool {
        true
    }
    /// Whether an answer the default reading rebuilds exactly, meeting all its figures, says
    /// nothing of it (so it is not rebuilt for evidence): a convention that only adds readings
    /// the count decides between.
    fn silent_where_default_is_exact(&self) -> bool {
        false
    }
    /// Undo it on the rebuilt ids; `false`: the rebuild does not fit the convention.
    fn after(&self, _profile: &Profile, _rebuilt: &mut Reconstruction) -> bool {
        true
    }
    /// What the answer shows, from the default rebuild and the rebuild under the convention:
    /// the reading with less doubt ([`doubt`]) is the one the answer supports.
    fn evidence(
        &self,
        answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        let _ = answer;
        match doubt(conventional).cmp(&doubt(default)) {
            std::cmp::Ordering::Less => Evidence::Explains,
            std::cmp::Ordering::Greater => Evidence::Contradicts,
            std::cmp::Ordering::Equal => Evidence::Unexplained,
        }
    }
}

/// How much a rebuild leaves in doubt: its class, then how many of the answer's own figures it
/// disagrees with or leaves to an unnamed stack. Not being `inconsistent` is not enough: a
/// count one off can often be met by another whitespace split (a rebuild then `ambiguous` or
/// `lossy`, not wrong by its class), so a convention must read the answer with less doubt than
/// the default does.
pub(super) fn doubt(r: &Reconstruction) -> (FidelityClass, usize) {
    const DISAGREEMENTS: [Reason; 5] = [
        Reason::UsageDisagrees,
        Reason::PromptTokensDisagree,
        Reason::ForwardMismatch,
        Reason::UpstreamMaySpaceSpecialTokens,
        Reason::UpstreamMayGenerateThink,
    ];
    let disagreements = r
        .fidelity
        .reasons
        .iter()
        .filter(|reason| DISAGREEMENTS.contains(reason))
        .count();
    (r.fidelity.class, disagreements)
}

pub(super) fn counted(c: &Completion) -> Option<u64> {
    c.usage.as_ref().and_then(|u| u.completion_tokens)
}

/// The conventions whose inverses apply before the shapes'.
const BEFORE_SHAPES: [&dyn Convention; 9] = [
    &UsageExcludesEndToken,
    &GeneratesThink,
    &PromptsThink,
    &SpacesSpecialTokens,
    &NoSpacesSpecialTokens,
    &IdsWithoutPrefix,
    &IdsIndexOnly,
    &IdsMinted,
    &CompactsArguments,
];

/// The whitespace conventions come last: their inverse adds a quirk to whatever shape the
/// others chose.
const AFTER_SHAPES: [&dyn Convention; 5] = [
    &STRIPS_REASONING_START,
    &STRIPS_REASONING_END,
    &STRIPS_CONTENT_START,
    &STRIPS_CONTENT_END_BEFORE_CALLS,
    &STRIPS_CONTENT_END,
];

const COUNT: usize = BEFORE_SHAPES.len() + shape::SLOTS + AFTER_SHAPES.len();

/// Every convention inference considers, in the order their inverses apply: the known server
/// shapes ([`KNOWN_SHAPES`], from the server module's list) between the others.
pub const CONVENTIONS: [&dyn Convention; COUNT] = conventions();

const fn conventions() -> [&'static dyn Convention; COUNT] {
    let mut out = [BEFORE_SHAPES[0]; COUNT];
    let mut i = 0;
    while i < BEFORE_SHAPES.len() {
        out[i] = BEFORE_SHAPES[i];
        i += 1;
    }
    let mut slot = 0;
    while slot < shape::SLOTS {
        out[i] = &KNOWN_SHAPES[slot];
        (i, slot) = (i + 1, slot + 1);
    }
    let mut after = 0;
    while after < AFTER_SHAPES.len() {
        out[i] = AFTER_SHAPES[after];
        (i, after) = (i + 1, after + 1);
    }
    out
}

/// The convention named `name`.
pub fn convention(name: &str) -> Option<&'static dyn Convention> {
    CONVENTIONS.into_iter().find(|c| c.name() == name)
}

/// Rebuild one answer under `conventions` (those that apply to it); the names of those applied.
/// A convention whose rebuild does not fit it ([`Convention::after`]) is left out and the answer
/// rebuilt without it.
pub fn rebuild(
    answer: &Answer,
    conventions: &[&'static dyn Convention],
) -> Result<(Reconstruction, Vec<&'static str>), ReconstructError> {
    let mut applied: Vec<&'static dyn Convention> = conventions
        .iter()
        .copied()
        .filter(|c| c.applies(answer))
        .collect();
    loop {
        if applied.is_empty() {
            let r = reconstruct_parsed(
                answer.profile,
                answer.request,
                answer.completion,
                answer.options,
                answer.options.shape(),
            )?;
            return Ok((r, Vec::new()));
        }
        let mut inverted = Inverted {
            profile: answer.profile,
            request: answer.request.clone(),
            completion: answer.completion.clone(),
            options: answer.options.clone(),
            shape: answer.options.shape(),
        };
        for c in &applied {
            c.inverse(&mut inverted);
        }
        let mut r = reconstruct_parsed(
            answer.profile,
            &inverted.request,
            &inverted.completion,
            &inverted.options,
            inverted.shape,
        )?;
        if let Some(misfit) = applied
            .iter()
            .position(|c| !c.after(answer.profile, &mut r))
        {
            applied.remove(misfit);
            continue;
        }
        let named: Vec<_> = applied.iter().filter(|c| c.names(answer, &r)).collect();
        for c in named {
            r.fidelity.because(c.reason());
            r.warnings.push(format!(
                "rebuilt under the provider's inferred convention {}",
                c.name()
            ));
        }
        return Ok((r, applied.iter().map(|c| c.name()).collect()));
    }
}

/// The tally of one convention over a provider's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub explains: u64,
    pub unexplained: u64,
    pub contradicts: u64,
}

impl Tally {
    /// Answers the convention makes a difference to.
    pub fn differs(&self) -> u64 {
        self.explains + self.unexplained + self.contradicts
    }

    pub fn add(&mut self, evidence: Evidence) {
        match evidence {
            Evidence::Silent => {}
            Evidence::Explains => self.explains += 1,
            Evidence::Unexplained => self.unexplained += 1,
            Evidence::Contradicts => self.contradicts += 1,
        }
    }

    /// The rule: enough answers, nearly all explained, none the default explains contradicted.
    pub fn adopts(&self) -> bool {
        let differs = self.differs();
        differs >= MIN_ANSWERS
            && self.contradicts == 0
            && self.explains as f64 >= SHARE * differs as f64
    }
}

/// The evidence of one provider's answers, per convention (in [`CONVENTIONS`] order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupEvidence {
    /// Answers read for evidence.
    pub evaluated: u64,
    pub tallies: [Tally; CONVENTIONS.len()],
    /// Answers with tool calls, by the form of their ids ([`id_form`]).
    pub id_forms: std::collections::BTreeMap<&'static str, u64>,
    /// Answers with reasoning, by the field that carried it ([`reasoning_field`]).
    pub reasoning_fields: std::collections::BTreeMap<&'static str, u64>,
}

impl GroupEvidence {
    /// Add one answer's evidence ([`evidence_of`]).
    pub fn add(&mut self, evidence: &[Evidence; CONVENTIONS.len()]) {
        self.evaluated += 1;
        for (tally, e) in self.tallies.iter_mut().zip(evidence) {
            tally.add(*e);
        }
    }

    /// The conventions the evidence adopts.
    pub fn adopted(&self) -> Vec<&'static dyn Convention> {
        let tallies: Vec<_> = CONVENTIONS.into_iter().zip(self.tallies).collect();
        let mut adopted: Vec<_> = tallies
            .iter()
            .filter(|(c, t)| !shape::is_shape(*c) && t.adopts())
            .map(|(c, _)| *c)
            .collect();
        adopted.extend(shape::chosen(&tallies));
        adopted
    }

    /// `"completion count = rebuilt − 1 in 12 of 12"` for convention `index`.
    pub fn describe(&self, index: usize) -> String {
        let t = &self.tallies[index];
        let mut text = format!(
            "{} in {} of {}",
            CONVENTIONS[index].describe(),
            t.explains,
            t.differs()
        );
        if t.contradicts > 0 {
            text.push_str(&format!(
                "; contradicted by {} the default reading explains",
                t.contradicts
            ));
        }
        text
    }
}

/// What one answer shows of every convention: the default rebuild, and a rebuild under each
/// convention that applies (a cut answer, say, is silent on the end token's count).
pub fn evidence_of(answer: &Answer) -> Result<[Evidence; CONVENTIONS.len()], ReconstructError> {
    let mut out = [Evidence::Silent; CONVENTIONS.len()];
    if answer.completion.completion_token_ids.is_some() {
        return Ok(out); // the server's own ids: nothing for a convention to explain
    }
    let mut applicable = Vec::new();
    for (i, convention) in CONVENTIONS.into_iter().enumerate() {
        if let Some(shown) = convention.shown(answer) {
            out[i] = shown;
        } else if convention.applies(answer) {
            applicable.push(i);
        }
    }
    if applicable.is_empty() {
        return Ok(out);
    }
    let default = reconstruct_parsed(
        answer.profile,
        answer.request,
        answer.completion,
        answer.options,
        answer.options.shape(),
    )?;
    // The length of the answer's most likely reading, rebuilt without its count (computed once,
    // when a count convention's two readings tie).
    let mut natural: Option<usize> = None;
    let default_exact = default.fidelity.class.is_exact() && doubt(&default).1 == 0;
    for i in applicable {
        let convention = CONVENTIONS[i];
        if default_exact && convention.silent_where_default_is_exact() {
            continue;
        }
        let (conventional, applied) = rebuild(answer, &[convention])?;
        out[i] = if applied.is_empty() {
            Evidence::Silent
        } else {
            convention.evidence(answer, &default, &conventional)
        };
        if let (Evidence::Unexplained, Some(shift)) = (out[i], convention.count_shift()) {
            if doubt(&conventional) == doubt(&default) {
                if natural.is_none() {
                    natural = Some(natural_length(answer)?);
                }
                out[i] = by_natural_length(counted(answer.completion), natural, shift);
            }
        }
    }
    Ok(out)
}

/// The completion length of the answer's most likely reading: rebuilt with no count to meet.
fn natural_length(answer: &Answer) -> Result<usize, ReconstructError> {
    let mut uncounted = answer.completion.clone();
    if let Some(usage) = uncounted.usage.as_mut() {
        usage.completion_tokens = None;
    }
    let r = reconstruct_parsed(
        answer.profile,
        answer.request,
        &uncounted,
        answer.options,
        answer.options.shape(),
    )?;
    Ok(r.completion_ids.len())
}

/// A tie settled by the most likely reading's length: the reported count is that length
/// (the default reading's) or that length shifted as the convention says.
fn by_natural_length(reported: Option<u64>, natural: Option<usize>, shift: i64) -> Evidence {
    let (Some(natural), Some(reported)) = (natural, reported) else {
        return Evidence::Unexplained;
    };
    let (natural, reported) = (natural as i64, reported as i64);
    if reported == natural {
        Evidence::Contradicts
    } else if reported == natural + shift {
        Evidence::Explains
    } else {
        Evidence::Unexplained
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(explains: u64, unexplained: u64, contradicts: u64) -> Tally {
        Tally {
            explains,
            unexplained,
            contradicts,
        }
    }

    #[test]
    fn a_convention_is_adopted_only_on_enough_consistent_evidence() {
        // 12 of 12 finished answers one short (DeepInfra in tests/data/provider_conventions).
        assert!(tally(12, 0, 0).adopts());
        // Below the minimum: nothing inferred.
        assert!(!tally(7, 0, 0).adopts());
        // One answer the default explains and the convention does not: never adopted.
        assert!(!tally(20, 0, 1).adopts());
        // Nearly every answer: 9 of 10 explained, one neither reading explains.
        assert!(tally(9, 1, 0).adopts());
        assert!(!tally(8, 2, 0).adopts());
    }

    #[test]
    fn a_tie_is_settled_by_the_most_likely_readings_length() {
        // tests/data/provider_conventions, news_call: the model wrote 63 tokens; DeepInfra
        // reports 62 (no end token), Fireworks 63.
        assert_eq!(
            by_natural_length(Some(62), Some(63), -1),
            Evidence::Explains
        );
        assert_eq!(
            by_natural_length(Some(63), Some(63), -1),
            Evidence::Contradicts
        );
        assert_eq!(
            by_natural_length(Some(61), Some(63), -1),
            Evidence::Unexplained
        );
        // AtlasCloud: one more than the render's reading (the generated `<think>`).
        assert_eq!(by_natural_length(Some(64), Some(63), 1), Evidence::Explains);
        assert_eq!(by_natural_length(None, Some(63), 1), Evidence::Unexplained);
    }

    #[test]
    fn names_and_reasons_are_stable() {
        for c in CONVENTIONS {
            let reason = serde_json::to_value(c.reason()).expect("a reason");
            // A shape without a reason of its own carries `provider_shape`
            // (shape.rs pins the known ones' own).
            let general = shape::is_shape(c) && c.reason() == Reason::ProviderShape;
            assert!(general || reason == format!("provider_{}", c.name()).as_str());
            assert!(convention(c.name()).is_some());
        }
    }
}
