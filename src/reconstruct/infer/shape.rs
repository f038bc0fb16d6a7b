//! The server shape behind an undeclared endpoint, found from its answers.
//!
//! Under `generic` a rebuild stays exact only where no known shape could have hidden anything
//! (`reconstruct/undeclared.rs`), so every answer that vLLM's stripped reasoning whitespace,
//! SGLang's re-synthesized ids or vLLM's spaces around added tokens could explain is
//! `ambiguous`. Each known shape is one [`Convention`] here: rebuilt under it, an answer reads
//! with less doubt than under `generic` (explains), with more (contradicts: that shape would not
//! have sent it, or reads it as lossy where `generic` does not), or the same (silent when the ids
//! agree). A shape is adopted by the usual rule ([`super::Tally::adopts`]: at least
//! [`super::MIN_ANSWERS`] answers it makes a difference to, nearly all explained, none
//! contradicted), and only when it is the one shape adopted ([`exclusive`]): answers two shapes
//! explain alike do not tell which server it is.

use crate::api::ServerKind;
use crate::reconstruct::fidelity::{FidelityClass, Reason};
use crate::reconstruct::Reconstruction;
use crate::server::{llamacpp, sglang, vllm, ServerShape};

use super::{Answer, Convention, Evidence, Inverted, Tally};

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
    describe: "read with less doubt as vLLM 0.33's answer than as an unknown server's",
    shape: &vllm::SHAPE,
    spaces: false,
};

pub const SHAPE_VLLM_SPACED: KnownShape = KnownShape {
    name: "shape_vllm_spaced",
    reason: Reason::ProviderShapeVllmSpaced,
    describe: "read with less doubt as vLLM 0.33's answer with spaces around added tokens than as an unknown server's",
    shape: &vllm::SHAPE,
    spaces: true,
};

pub const SHAPE_VLLM_0_11: KnownShape = KnownShape {
    name: "shape_vllm_0_11",
    reason: Reason::ProviderShapeVllm011,
    describe: "read with less doubt as vLLM 0.11's answer than as an unknown server's",
    shape: &vllm::SHAPE_0_11,
    spaces: false,
};

pub const SHAPE_VLLM_0_11_SPACED: KnownShape = KnownShape {
    name: "shape_vllm_0_11_spaced",
    reason: Reason::ProviderShapeVllm011Spaced,
    describe: "read with less doubt as vLLM 0.11's answer with spaces around added tokens than as an unknown server's",
    shape: &vllm::SHAPE_0_11,
    spaces: true,
};

pub const SHAPE_SGLANG: KnownShape = KnownShape {
    name: "shape_sglang",
    reason: Reason::ProviderShapeSglang,
    describe: "read with less doubt as SGLang 0.5's answer than as an unknown server's",
    shape: &sglang::SHAPE,
    spaces: false,
};

pub const SHAPE_LLAMACPP: KnownShape = KnownShape {
    name: "shape_llamacpp",
    reason: Reason::ProviderShapeLlamacpp,
    describe: "read with less doubt as llama.cpp's answer than as an unknown server's",
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

/// The adopted conventions, a shape among them only where every other known shape is ruled out
/// (contradicted by at least one of the group's answers: that shape cannot have sent it). Two
/// shapes that both could have sent every answer do not say which server it is.
pub fn exclusive(
    adopted: Vec<&'static dyn Convention>,
    tallies: &[(&'static dyn Convention, Tally)],
) -> Vec<&'static dyn Convention> {
    let open = |c: &dyn Convention| {
        tallies
            .iter()
            .any(|(other, t)| is_shape(*other) && other.name() != c.name() && t.contradicts == 0)
    };
    adopted
        .into_iter()
        .filter(|c| !is_shape(*c) || !open(*c))
        .collect()
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
    /// An answer the shape cannot have sent (no token stream it would have answered so)
    /// contradicts it; one it reads otherwise than `generic` does (other ids, or another class)
    /// shows it; one it reads alike says nothing.
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        let same = conventional.completion_ids == default.completion_ids
            && conventional.fidelity.class == default.fidelity.class;
        match conventional.fidelity.class {
            FidelityClass::Inconsistent => Evidence::Contradicts,
            _ if same => Evidence::Silent,
            _ => Evidence::Explains,
        }
    }
}
