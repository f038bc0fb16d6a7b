//! Which server shape best explains a target's answers: every known [`ServerShape`] is held
//! against the clues all scenarios gave, and against the forward check (the shape's own
//! [`crate::server::forward`] sends back what was received from the text the answer implies).
//! The shape contradicting the fewest clues, then fitting the most, wins; ties go to the order
//! of [`SHAPES`] (newest version of each kind first). An unknown server (`generic`) wins only
//! when no known shape fits better — then `--kind generic` is the honest declaration. A kind's
//! own dressing (llama.cpp's `timings`, OpenRouter's `provider` and `cost`) decides the kind
//! outright; what its shape then does not explain is listed (`contradicted_by`), not hidden.

use std::collections::BTreeSet;

use serde::Serialize;

use super::observe::{Clue, Observation};
use crate::api::ServerKind;
use crate::server::{kind_name, ServerShape, SHAPES};

/// The verdict for one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recognition {
    /// `vllm 0.33`, `sglang 0.5`, `llamacpp`, `openrouter`, `generic`.
    pub shape: String,
    /// The flags that declare it to `generate`.
    pub declare: String,
    /// Clues the shape fits / all clues seen.
    pub fits: usize,
    pub clues: usize,
    /// What the chosen shape does not explain.
    pub contradicted_by: Vec<String>,
    /// Other shapes that explain the answers as well (the probe could not tell them apart).
    pub also_fits: Vec<String>,
}

/// `--kind` (and `--server-version`) for a shape.
pub fn declaration(shape: &ServerShape) -> String {
    let kind = format!("--kind {}", kind_name(shape.kind));
    match (shape.kind, shape.version) {
        (ServerKind::Vllm, v) if v.starts_with("0.11") => format!("{kind} --server-version 0.11"),
        _ => kind,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    contradictions: usize,
    /// Negated so that the smallest tuple is best.
    neg_fits: isize,
    unknown: bool,
}

fn score(
    shape: &ServerShape,
    clues: &BTreeSet<Clue>,
    observations: &[&Observation],
) -> (Score, Vec<String>) {
    let mut contradicted = Vec::new();
    let mut fits = 0usize;
    for clue in clues {
        if clue.fits(shape) {
            fits += 1;
        } else {
            contradicted.push(clue.describe());
        }
    }
    // The forward check, per answer that was checked.
    let name = shape.describe();
    for o in observations.iter().filter(|o| !o.forward_agrees.is_empty()) {
        if o.forward_agrees.contains(&name) {
            fits += 1;
        }
    }
    (
        Score {
            contradictions: contradicted.len(),
            neg_fits: -(fits as isize),
            unknown: !shape.known,
        },
        contradicted,
    )
}

/// The best shape for `clues` (all answers of one target) and `observations`.
pub fn recognize(clues: &BTreeSet<Clue>, observations: &[&Observation]) -> Recognition {
    // The software's own dressing (llama.cpp's `timings`, OpenRouter's `provider`/`cost`) says
    // which kind answered whatever its parsers did; the other clues then pick the shape.
    let dressed = |kind: ServerKind| match kind {
        ServerKind::LlamaCpp => clues.contains(&Clue::LlamaCppDress(true)),
        ServerKind::OpenRouter => clues.contains(&Clue::OpenRouterDress(true)),
        _ => false,
    };
    let identified = [ServerKind::LlamaCpp, ServerKind::OpenRouter]
        .into_iter()
        .find(|kind| dressed(*kind));
    let mut scored: Vec<(Score, &ServerShape, Vec<String>)> = SHAPES
        .iter()
        .filter(|shape| identified.is_none_or(|kind| shape.kind == kind))
        .map(|shape| {
            let (s, why) = score(shape, clues, observations);
            (s, *shape, why)
        })
        .collect();
    // Stable: ties keep SHAPES order.
    scored.sort_by_key(|(s, _, _)| *s);
    let (best_score, best, contradicted) = scored[0].clone();
    let also_fits = scored[1..]
        .iter()
        .filter(|(s, _, _)| *s == best_score)
        .map(|(_, shape, _)| shape.describe())
        .collect();
    Recognition {
        shape: best.describe(),
        declare: declaration(best),
        fits: clues.len() - contradicted.len(),
        clues: clues.len(),
        contradicted_by: contradicted,
        also_fits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::observe::ReasoningFieldName;

    fn best(clues: &[Clue]) -> Recognition {
        recognize(&clues.iter().copied().collect(), &[])
    }

    /// What an answer shows of the quirk named `quirk` (`with`: only a server with it sends it).
    fn quirk(quirk: &'static str, with: bool) -> Clue {
        Clue::Quirk {
            quirk,
            with,
            shows: quirk,
        }
    }

    /// Call ids the server minted (neither native nor `call_<24 hex>`).
    const MINTED: [Clue; 2] = [
        Clue::IdsOther,
        Clue::Quirk {
            quirk: "mints_call_ids",
            with: true,
            shows: "mints_call_ids",
        },
    ];

    #[test]
    fn raw_text_is_llamacpp_only_with_its_dressing() {
        let raw = [Clue::Parses(false), Clue::OpenRouterDress(false)];
        let mut llama = raw.to_vec();
        llama.push(Clue::LlamaCppDress(true));
        assert_eq!(best(&llama).declare, "--kind llamacpp");
        let mut other = raw.to_vec();
        other.push(Clue::LlamaCppDress(false));
        assert_eq!(best(&other).declare, "--kind generic");
        // llama.cpp's generic tool-call handler parses calls, which its shape does not model:
        // still llama.cpp, and the clue it does not explain is said.
        let parsed = [
            Clue::Parses(true),
            MINTED[0],
            MINTED[1],
            Clue::LlamaCppDress(true),
            Clue::OpenRouterDress(false),
        ];
        let r = best(&parsed);
        assert_eq!(r.declare, "--kind llamacpp");
        assert!(!r.contradicted_by.is_empty());
    }

    #[test]
    fn reasoning_field_and_call_shape_tell_vllm_lines_and_sglang_apart() {
        let common = [
            Clue::Parses(true),
            Clue::ReasoningDetails(false),
            Clue::LlamaCppDress(false),
            Clue::OpenRouterDress(false),
            quirk("finish_tool_calls", true),
        ];
        let with = |extra: &[Clue]| {
            let mut clues = common.to_vec();
            clues.extend_from_slice(extra);
            best(&clues)
        };
        // vLLM 0.11.2 sends the reasoning under both names (its own code, kimi_k25_vllm011.jsonl).
        let old = with(&[
            Clue::ReasoningIn(ReasoningFieldName::Both),
            // … and mints non-streamed call ids (`chatcmpl-tool-…`).
            MINTED[0],
            MINTED[1],
            quirk("empty_content_as_string", false),
            quirk("indexes_calls", false),
        ]);
        assert_eq!(old.declare, "--kind vllm --server-version 0.11");
        let new = with(&[
            Clue::ReasoningIn(ReasoningFieldName::Reasoning),
            quirk("mints_call_ids", false),
            quirk("empty_content_as_string", false),
        ]);
        assert_eq!(new.shape, "vllm 0.33");
        let sglang = with(&[
            Clue::ReasoningIn(ReasoningFieldName::ReasoningContent),
            quirk("mints_call_ids", false),
            quirk("empty_content_as_string", true),
            quirk("indexes_calls", true),
        ]);
        assert_eq!(sglang.shape, "sglang 0.5");
        assert!(sglang.contradicted_by.is_empty());
    }

    #[test]
    fn openrouter_is_recognized_whatever_form_its_upstream_gives_the_ids() {
        let dressed = [
            Clue::Parses(true),
            Clue::LlamaCppDress(false),
            Clue::OpenRouterDress(true),
        ];
        // `call_…` (OpenAI-style upstreams), `"0"` / `NAME:N` (minted upstream), native.
        let forms: [&[Clue]; 4] = [
            &[Clue::IdsOpenRouter],
            &MINTED,
            &[Clue::IdsOther],
            &[quirk("mints_call_ids", false)],
        ];
        for ids in forms {
            let mut clues = dressed.to_vec();
            clues.extend_from_slice(ids);
            let r = best(&clues);
            assert_eq!(r.declare, "--kind openrouter", "{ids:?}");
            assert!(r.contradicted_by.is_empty(), "{ids:?}: {r:?}");
        }
    }
}
