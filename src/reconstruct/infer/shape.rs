//! The server shape behind an undeclared endpoint, found from its answers.
//!
//! Under `generic` a rebuild stays exact only where no known shape could have hidden anything
//! (`reconstruct/undeclared.rs`), so every answer that vLLM's stripped reasoning whitespace,
//! SGLang's re-synthesized ids or vLLM's spaces around added tokens could explain is
//! `ambiguous`. Each known shape is one [`Convention`] here: rebuilt under it, an answer reads
//! with less doubt than under `generic` (explains), with more (contradicts: that shape would not
//! have sent it, or reads it as lossy where `generic` does not), or the same (silent when the ids
//! agree). A shape is adopted only when it is the one known shape that fits the group's answers
//! ([`chosen`]); below [`MIN_ANSWERS`] nothing is inferred and `generic` stays cautious.
//!
//! The shapes are the server module's list ([`server::SHAPES`]), one [`KnownShape`] per shape
//! and detokenizer spacing ([`KNOWN_SHAPES`]), so a shape added there is inferred with no edit
//! here. A slot whose shape an undeclared server's answers cannot show never applies: `generic`
//! itself, a router that passes another stack's answers on (OpenRouter: the stack behind it is
//! what its answers show), a spacing the shape does not have.

use std::sync::OnceLock;

use crate::api::ServerKind;
use crate::reconstruct::fidelity::{FidelityClass, Reason};
use crate::reconstruct::Reconstruction;
use crate::server::quirks::PassesUpstreamCallIds;
use crate::server::{self, ServerShape};

use super::{Answer, Convention, Evidence, Inverted, Tally, MIN_ANSWERS, SHARE};

/// A known server shape, with its detokenizer's spaces around added tokens or without, taken
/// for an undeclared one.
#[derive(Clone, Copy)]
pub struct KnownShape {
    /// Its index in [`KNOWN_SHAPES`].
    slot: usize,
    shape: &'static ServerShape,
    spaces: bool,
}

/// One slot per shape of [`server::SHAPES`] and spacing (without, with).
pub const SLOTS: usize = 2 * server::SHAPES.len();

/// Every shape convention, in [`server::SHAPES`] order, each without spaces then with.
pub static KNOWN_SHAPES: [KnownShape; SLOTS] = slots();

const fn slots() -> [KnownShape; SLOTS] {
    let mut out = [KnownShape {
        slot: 0,
        shape: server::SHAPES[0],
        spaces: false,
    }; SLOTS];
    let mut slot = 0;
    while slot < SLOTS {
        out[slot] = KnownShape {
            slot,
            shape: server::SHAPES[slot / 2],
            spaces: slot % 2 == 1,
        };
        slot += 1;
    }
    out
}

/// What a slot's shape and spacing make of it (computed once: names are `&'static`).
struct Derived {
    name: String,
    describe: String,
    reason: Reason,
    /// An undeclared server's answers can show it.
    live: bool,
}

fn derived(slot: usize) -> &'static Derived {
    static ALL: OnceLock<Vec<Derived>> = OnceLock::new();
    &ALL.get_or_init(|| KNOWN_SHAPES.iter().map(KnownShape::derive).collect())[slot]
}

impl KnownShape {
    /// `shape_vllm`, `shape_vllm_0_11_spaced`: the kind, the version line where it is not the
    /// kind's newest, the spacing; its reason `provider_` and the name, or
    /// [`Reason::ProviderShape`] for a shape without one of its own.
    fn derive(&self) -> Derived {
        let name = self.shape.slot_name(self.spaces);
        let mut shape = self.shape.describe();
        if self.spaces {
            shape.push_str(" with spaces around added tokens");
        }
        let reason = Reason::named(&format!("provider_{name}")).unwrap_or(Reason::ProviderShape);
        let live = self.shape.known
            && !self.shape.quirks.has::<PassesUpstreamCallIds>()
            && self.shape.spacings().contains(&self.spaces);
        Derived {
            describe: format!(
                "read consistently as an answer of {shape}, otherwise than as an unknown server's"
            ),
            name,
            reason,
            live,
        }
    }
}

/// Whether `convention` is one of the shapes here.
pub fn is_shape(convention: &dyn Convention) -> bool {
    KNOWN_SHAPES.iter().any(|k| k.name() == convention.name())
}

/// The one shape that fits a group's answers, if exactly one does. A shape fits when at least
/// [`MIN_ANSWERS`] answers it reads otherwise than `generic` does, and at least [`SHARE`] of
/// them, are explained (read consistently), the rest contradicting it: answers a shape cannot
/// rebuild are not all another server's (tests/data/server_shapes/ holds answers even the
/// declared server's shape rebuilds as inconsistent: another family's markers, a history the
/// template re-renders), so one such answer does not rule the shape out, but a tenth does. Two
/// shapes that both fit do not say which server it is: none is chosen.
pub fn chosen(tallies: &[(&'static dyn Convention, Tally)]) -> Option<&'static dyn Convention> {
    let fits =
        |t: &Tally| t.explains >= MIN_ANSWERS && t.explains as f64 >= SHARE * t.differs() as f64;
    let mut fitting = tallies
        .iter()
        .filter(|(c, t)| is_shape(*c) && fits(t))
        .map(|(c, _)| *c);
    let first = fitting.next()?;
    fitting.next().is_none().then_some(first)
}

/// The shapes a group's answers rule out as its server: at least [`MIN_ANSWERS`] answers, and
/// [`SHARE`] of those it reads otherwise than `generic` does, are answers it cannot have sent.
/// The mirror of [`chosen`]'s fit: a shape's own answers that it cannot rebuild are a few (another
/// family's markers, a re-rendered history), never nine in ten. An answer of such a group is not
/// checked against the shape one by one (`reconstruct/undeclared.rs`).
pub fn ruled_out(tallies: &[(&'static dyn Convention, Tally)]) -> Vec<String> {
    tallies
        .iter()
        .filter(|(c, t)| {
            is_shape(*c)
                && t.contradicts >= MIN_ANSWERS
                && t.contradicts as f64 >= SHARE * t.differs() as f64
        })
        .map(|(c, _)| c.name().to_string())
        .collect()
}

impl Convention for KnownShape {
    fn name(&self) -> &'static str {
        &derived(self.slot).name
    }
    fn reason(&self) -> Reason {
        derived(self.slot).reason
    }
    fn describe(&self) -> &'static str {
        &derived(self.slot).describe
    }
    /// Only an answer of an undeclared server, without the server's own ids.
    fn applies(&self, a: &Answer) -> bool {
        derived(self.slot).live
            && a.options.kind == ServerKind::Generic
            && !a.options.shape().known
            && a.completion.completion_token_ids.is_none()
            && (!self.spaces || a.profile.family.spec().detokenizer_spaces)
    }
    fn inverse(&self, a: &mut Inverted) {
        a.options.kind = self.shape.kind;
        a.options.server_version = None;
        a.options.spaces_around_special_tokens = self.spaces;
        a.shape = self.shape;
    }
    /// An answer the shape cannot have sent (no token stream it would have answered so) while
    /// `generic` reads it contradicts it; one it reads otherwise than `generic` does (other ids,
    /// or another class) shows it; one it reads alike, or neither can read, says nothing.
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        let same = conventional.completion_ids == default.completion_ids
            && conventional.fidelity.class == default.fidelity.class;
        let unread = |r: &Reconstruction| r.fidelity.class == FidelityClass::Inconsistent;
        match (unread(conventional), unread(default)) {
            (true, true) => Evidence::Silent,
            (true, false) => Evidence::Contradicts,
            _ if same => Evidence::Silent,
            _ => Evidence::Explains,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconstruct::infer::{convention, UsageExcludesEndToken};

    fn tally(explains: u64, contradicts: u64) -> Tally {
        Tally {
            explains,
            unexplained: 0,
            contradicts,
        }
    }

    fn shape(name: &str) -> &'static dyn Convention {
        convention(name).expect("a shape convention")
    }

    #[test]
    fn the_shapes_are_the_server_modules_known_stacks_with_their_stable_names() {
        let live: Vec<(&str, Reason)> = KNOWN_SHAPES
            .iter()
            .filter(|k| derived(k.slot).live)
            .map(|k| (k.name(), k.reason()))
            .collect();
        assert_eq!(
            live,
            [
                ("shape_vllm", Reason::ProviderShapeVllm),
                ("shape_vllm_spaced", Reason::ProviderShapeVllmSpaced),
                ("shape_vllm_0_11", Reason::ProviderShapeVllm011),
                ("shape_vllm_0_11_spaced", Reason::ProviderShapeVllm011Spaced),
                ("shape_sglang", Reason::ProviderShapeSglang),
                ("shape_llamacpp", Reason::ProviderShapeLlamacpp),
            ]
        );
        let mut names: Vec<_> = KNOWN_SHAPES.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SLOTS);
    }

    // The tallies are those tests/generic_shape.rs prints for the server-shape corpus.
    #[test]
    fn the_one_shape_that_fits_is_chosen() {
        // SGLang's streamed answers: SGLang explains 160 of 165, vLLM 51 of 96.
        let sglang = [
            (shape("shape_sglang"), tally(160, 5)),
            (shape("shape_vllm"), tally(51, 45)),
            (&UsageExcludesEndToken as &dyn Convention, tally(100, 0)),
        ];
        assert_eq!(chosen(&sglang).map(|c| c.name()), Some("shape_sglang"));
    }

    #[test]
    fn two_shapes_that_fit_choose_none() {
        // vLLM 0.33 non-streamed with spaces: spaced 195 of 198, unspaced 85 of 90.
        let both = [
            (shape("shape_vllm_spaced"), tally(195, 3)),
            (shape("shape_vllm"), tally(85, 5)),
        ];
        assert!(chosen(&both).is_none());
    }

    #[test]
    fn a_shape_is_ruled_out_only_by_nine_in_ten_of_enough_answers() {
        // The bench journal's group: llama.cpp's shape cannot have sent any of 256.
        let none_fit = [
            (shape("shape_llamacpp"), tally(0, 256)),
            (shape("shape_sglang"), tally(256, 0)),
        ];
        assert_eq!(ruled_out(&none_fit), ["shape_llamacpp"]);
        // vLLM 0.11's own non-streamed answers: 13 of 118 it cannot rebuild — still its server.
        assert!(ruled_out(&[(shape("shape_vllm_0_11"), tally(105, 13))]).is_empty());
        // Too few answers to rule anything out.
        assert!(ruled_out(&[(shape("shape_vllm"), tally(0, 7))]).is_empty());
        // Not a shape.
        assert!(ruled_out(&[(&UsageExcludesEndToken as &dyn Convention, tally(0, 50))]).is_empty());
    }

    #[test]
    fn too_few_answers_or_too_many_contradictions_choose_none() {
        assert!(chosen(&[(shape("shape_vllm"), tally(7, 0))]).is_none());
        // vLLM 0.11 non-streamed: 105 of 118 explained is below nine in ten.
        assert!(chosen(&[(shape("shape_vllm_0_11"), tally(105, 13))]).is_none());
        assert!(chosen(&[(&UsageExcludesEndToken as &dyn Convention, tally(50, 0))]).is_none());
    }
}
