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

use crate::api::ServerKind;
use crate::reconstruct::fidelity::{FidelityClass, Reason};
use crate::reconstruct::Reconstruction;
use crate::server::{llamacpp, sglang, vllm, ServerShape};

use super::{Answer, Convention, Evidence, Inverted, Tally, MIN_ANSWERS, SHARE};

/// A known server shape (with vLLM's detokenizer spacing on or off) taken for an undeclared one.
pub struct KnownShape {
    name: &'static str,
    reason: Reason,
    describe: &'static str,
    shape: &'static ServerShape,
    spaces: bool,
}

pub const SHAPE_VLLM: KnownShape = KnownShape {
    name: "shape_vllm",
    reason: Reason::ProviderShapeVllm,
    describe: "read consistently as vLLM 0.33's answer, otherwise than as an unknown server's",
    shape: &vllm::SHAPE,
    spaces: false,
};

pub const SHAPE_VLLM_SPACED: KnownShape = KnownShape {
    name: "shape_vllm_spaced",
    reason: Reason::ProviderShapeVllmSpaced,
    describe: "read consistently as vLLM 0.33's answer with spaces around added tokens, otherwise than as an unknown server's",
    shape: &vllm::SHAPE,
    spaces: true,
};

pub const SHAPE_VLLM_0_11: KnownShape = KnownShape {
    name: "shape_vllm_0_11",
    reason: Reason::ProviderShapeVllm011,
    describe: "read consistently as vLLM 0.11's answer, otherwise than as an unknown server's",
    shape: &vllm::SHAPE_0_11,
    spaces: false,
};

pub const SHAPE_VLLM_0_11_SPACED: KnownShape = KnownShape {
    name: "shape_vllm_0_11_spaced",
    reason: Reason::ProviderShapeVllm011Spaced,
    describe: "read consistently as vLLM 0.11's answer with spaces around added tokens, otherwise than as an unknown server's",
    shape: &vllm::SHAPE_0_11,
    spaces: true,
};

pub const SHAPE_SGLANG: KnownShape = KnownShape {
    name: "shape_sglang",
    reason: Reason::ProviderShapeSglang,
    describe: "read consistently as SGLang 0.5's answer, otherwise than as an unknown server's",
    shape: &sglang::SHAPE,
    spaces: false,
};

pub const SHAPE_LLAMACPP: KnownShape = KnownShape {
    name: "shape_llamacpp",
    reason: Reason::ProviderShapeLlamacpp,
    describe: "read consistently as llama.cpp's answer, otherwise than as an unknown server's",
    shape: &llamacpp::SHAPE,
    spaces: false,
};

/// Every shape conventions' name, to tell them from the other conventions.
const NAMES: [&str; 6] = [
    SHAPE_VLLM.name,
    SHAPE_VLLM_SPACED.name,
    SHAPE_VLLM_0_11.name,
    SHAPE_VLLM_0_11_SPACED.name,
    SHAPE_SGLANG.name,
    SHAPE_LLAMACPP.name,
];

/// Whether `convention` is one of the shapes here.
pub fn is_shape(convention: &dyn Convention) -> bool {
    NAMES.contains(&convention.name())
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

impl Convention for KnownShape {
    fn name(&self) -> &'static str {
        self.name
    }
    fn reason(&self) -> Reason {
        self.reason
    }
    fn describe(&self) -> &'static str {
        self.describe
    }
    /// Only an answer of an undeclared server, without the server's own ids.
    fn applies(&self, a: &Answer) -> bool {
        a.options.kind == ServerKind::Generic
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
    use crate::reconstruct::infer::UsageExcludesEndToken;

    fn tally(explains: u64, contradicts: u64) -> Tally {
        Tally {
            explains,
            unexplained: 0,
            contradicts,
        }
    }

    // The tallies are those tests/generic_shape.rs prints for the server-shape corpus.
    #[test]
    fn the_one_shape_that_fits_is_chosen() {
        // SGLang's streamed answers: SGLang explains 160 of 165, vLLM 51 of 96.
        let sglang = [
            (&SHAPE_SGLANG as &dyn Convention, tally(160, 5)),
            (&SHAPE_VLLM as &dyn Convention, tally(51, 45)),
            (&UsageExcludesEndToken as &dyn Convention, tally(100, 0)),
        ];
        assert_eq!(chosen(&sglang).map(|c| c.name()), Some("shape_sglang"));
    }

    #[test]
    fn two_shapes_that_fit_choose_none() {
        // vLLM 0.33 non-streamed with spaces: spaced 195 of 198, unspaced 85 of 90.
        let both = [
            (&SHAPE_VLLM_SPACED as &dyn Convention, tally(195, 3)),
            (&SHAPE_VLLM as &dyn Convention, tally(85, 5)),
        ];
        assert!(chosen(&both).is_none());
    }

    #[test]
    fn too_few_answers_or_too_many_contradictions_choose_none() {
        assert!(chosen(&[(&SHAPE_VLLM as &dyn Convention, tally(7, 0))]).is_none());
        // vLLM 0.11 non-streamed: 105 of 118 explained is below nine in ten.
        assert!(chosen(&[(&SHAPE_VLLM_0_11 as &dyn Convention, tally(105, 13))]).is_none());
        assert!(chosen(&[(&UsageExcludesEndToken as &dyn Convention, tally(50, 0))]).is_none());
    }
}
