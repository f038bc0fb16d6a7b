//! How certain a sample's ids are, in a machine-readable form.
//!
//! Every reconstructed sample carries a [`Fidelity`]: one [`FidelityClass`] and the
//! [`Reason`]s behind it. Anything but `exact_by_server_ids` and `unique` means the ids may not be
//! the ones the model produced, and every such sample also carries a human-readable warning.
//! Downstream stages (build, verify, export) filter and count by these fields, never by parsing
//! warning text.

use serde::{Deserialize, Serialize};

use crate::server::Quirk;

/// The certainty class of one sample's completion ids, most certain first (the order is used:
/// [`Fidelity::at_most`] only ever moves down it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FidelityClass {
    /// The server returned its own token ids and they were used.
    ExactByServerIds,
    /// Exactly one token stream is consistent with the answer (and its `usage`): rebuilt exactly.
    Unique,
    /// A `length` cut split a multi-byte character: the last token is a partial-byte id that the
    /// text cannot show.
    TruncatedMidCharacter,
    /// Several token streams are consistent with the answer and nothing decides between them.
    Ambiguous,
    /// The server kind is known to destroy information that neither the answer nor its `usage`
    /// settles (a rewritten call id, stripped whitespace the count does not decide): the ids may
    /// differ from the model's where the reasons say.
    Lossy,
    /// No token stream consistent with the answer was found: the ids are not to be trusted.
    Inconsistent,
}

impl FidelityClass {
    pub const ALL: [FidelityClass; 6] = [
        FidelityClass::ExactByServerIds,
        FidelityClass::Unique,
        FidelityClass::TruncatedMidCharacter,
        FidelityClass::Ambiguous,
        FidelityClass::Lossy,
        FidelityClass::Inconsistent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FidelityClass::ExactByServerIds => "exact_by_server_ids",
            FidelityClass::Unique => "unique",
            FidelityClass::Ambiguous => "ambiguous",
            FidelityClass::Lossy => "lossy",
            FidelityClass::Inconsistent => "inconsistent",
            FidelityClass::TruncatedMidCharacter => "truncated_mid_character",
        }
    }

    /// The ids are the model's own, as far as anything can tell.
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            FidelityClass::ExactByServerIds | FidelityClass::Unique
        )
    }
}

/// Why a sample is in its class. Stable snake_case names: they are part of the output contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// `usage.completion_tokens` (or `prompt_tokens`) disagrees with the rebuilt ids.
    UsageDisagrees,
    /// The answer has no usable `usage.completion_tokens` to decide between candidates.
    NoUsage,
    /// `usage.prompt_tokens` differs from the rendered prompt's length and the server sent no
    /// prompt ids: the prompt the server rendered is not the one rebuilt (always noted; the
    /// sample is `inconsistent` where the server's count is known to be the render's,
    /// `server::quirks::CountsPromptAsRendered`).
    PromptTokensDisagree,
    /// The server strips trailing whitespace from the reasoning (vLLM).
    ServerStripsReasoningTrailingWhitespace,
    /// The server turns whitespace-only content into `null` (vLLM).
    ServerNullsWhitespaceContent,
    /// The server strips whitespace around tool-call arguments (non-streamed).
    ServerStripsArgumentWhitespace,
    /// The server strips whitespace at both ends of the content before tool calls
    /// (non-streamed; SGLang's `deepseekv31` and `qwen25` detectors).
    ServerStripsContentBeforeCalls,
    /// Streamed, text the model wrote between or after its tool calls joins `content`: which
    /// part of it came before the calls the answer cannot show, and the count does not decide.
    StreamedTextAfterCalls,
    /// The server re-serializes tool-call arguments (schema coercion, hermes `json.dumps`).
    ArgumentsReserialized,
    /// The server replaces the model's tool-call ids with its own.
    ServerRewritesToolCallIds,
    /// The server inserts spaces around special tokens; one space per side was removed.
    SpacesAroundSpecialTokens,
    /// The answer was cut by `max_tokens` where the server's parser drops what was cut.
    CutInsideToolSection,
    /// A `length` cut right after a complete call: the server cannot show whether more followed.
    CutAfterToolCall,
    /// The provider returned no reasoning although thinking is on (hidden or dropped).
    ReasoningMissing,
    /// Text spells a special token, and the count cannot tell the special id from the plain
    /// pieces that spell it (`reconstruct/literal.rs`).
    SpecialTokenLiteral,
    /// The reasoning ended where a tool section opened: the answer cannot show whether the
    /// model wrote the reasoning's close before it, and the count does not decide.
    ReasoningCloseNotShown,
    /// No closed tool call met the count; the last call was rebuilt unclosed (the model may
    /// have ended its turn inside it), which only the count suggests.
    LastCallLeftUnclosed,
    /// The answer contains another model family's markers.
    ForeignMarkers,
    /// The server's ids differ from the text's rebuild; the server's were used.
    ServerIdsDiffer,
    /// The server's ids were used as they were (no text rebuild involved).
    ServerIds,
    /// The answer re-encoded from text differs from what the server shape would have sent.
    ForwardMismatch,
    /// The last token is a partial UTF-8 character.
    PartialCharacter,
    /// Multi-turn: the template re-renders an earlier turn differently from what the model
    /// produced (it drops the turn's reasoning, say), so the history in the sample is not the
    /// token stream the model saw when it wrote that turn.
    HistoryRerenderDiffers,
    /// A text field begins or ends with a space where an added token sat, and the server
    /// (OpenRouter's upstream, or an undeclared one) may be a stack that puts spaces there
    /// (`reconstruct/upstream.rs`).
    UpstreamMaySpaceSpecialTokens,
    /// The server counted one prompt token fewer than the render, which ends with the reasoning
    /// opener: its stack may let the model generate the opener (`reconstruct/upstream.rs`).
    UpstreamMayGenerateThink,
    /// Rebuilt with the end token counted: the provider's `usage` leaves it out, as its other
    /// answers show (`reconstruct/infer/`).
    ProviderUsageExcludesEndToken,
    /// Rebuilt with the reasoning opener generated, not prompted, as the provider's other
    /// answers show (`reconstruct/infer/`).
    ProviderGeneratesThink,
    /// Rebuilt with the spaces around added tokens removed: the provider's stack puts them
    /// there, as its other answers show (`reconstruct/infer/`).
    ProviderSpacesSpecialTokens,
    /// Rebuilt with the tool-call ids `NAME:N` the provider sent read as the model's
    /// `functions.NAME:N`, as the provider's other answers show (`reconstruct/infer/ids.rs`).
    ProviderIdsWithoutPrefix,
    /// Rebuilt with the tool-call ids `N` the provider sent read as the model's
    /// `functions.NAME:N` (`reconstruct/infer/ids.rs`).
    ProviderIdsIndexOnly,
    /// The provider mints its own tool-call ids, as its other answers show: rebuilt as the
    /// family's ids numbered over the conversation, the sample `lossy`
    /// (`reconstruct/infer/ids.rs`).
    ProviderIdsMinted,
    /// Rebuilt with the tool-call arguments read as their JSON value, the spelling chosen by
    /// the count among every spelling of it: the provider re-serializes them compactly, as its
    /// other answers show (`reconstruct/infer/arguments.rs`).
    ProviderCompactsArguments,
    /// The doubt that a stack spaced added tokens lifted: the provider's other answers show its
    /// stack does not (`reconstruct/infer/negative.rs`).
    ProviderNoSpacesSpecialTokens,
    /// The doubt that the model generated the reasoning opener lifted: the provider's other
    /// answers show its template prompts it (`reconstruct/infer/negative.rs`).
    ProviderPromptsThink,
    /// The provider strips the whitespace at the reasoning's start, as its other answers show
    /// (`reconstruct/infer/strips.rs`): what the model wrote there is settled by the count, or
    /// open.
    ProviderStripsReasoningStart,
    /// … at the reasoning's end.
    ProviderStripsReasoningEnd,
    /// … at the content's start.
    ProviderStripsContentStart,
    /// … at the content's end before the tool calls.
    ProviderStripsContentEndBeforeCalls,
    /// … at the content's end, the answer's last field.
    ProviderStripsContentEnd,
    /// A request message's content is a list of several text parts, which vLLM joins with
    /// `"\n"` and SGLang with `" "` before the template (`model/client_messages.rs`): the prompt
    /// is rendered as vLLM does and may not be the server's.
    ContentPartsJoinDiffers,
    /// The server's kind was not declared and a known server shape the answer does not rule out
    /// would have sent it for other ids too; the shape's own reasons follow
    /// (`reconstruct/undeclared.rs`).
    GenericCouldHide,
    /// Rebuilt as vLLM 0.33's answer: the undeclared server's other answers rule out every
    /// other known shape (`reconstruct/infer/shape.rs`).
    ProviderShapeVllm,
    /// As [`Reason::ProviderShapeVllm`], with spaces around added tokens.
    ProviderShapeVllmSpaced,
    /// Rebuilt as vLLM 0.11's answer (`reconstruct/infer/shape.rs`).
    #[serde(rename = "provider_shape_vllm_0_11")]
    ProviderShapeVllm011,
    /// As [`Reason::ProviderShapeVllm011`], with spaces around added tokens.
    #[serde(rename = "provider_shape_vllm_0_11_spaced")]
    ProviderShapeVllm011Spaced,
    /// Rebuilt as SGLang 0.5's answer (`reconstruct/infer/shape.rs`).
    ProviderShapeSglang,
    /// Rebuilt as llama.cpp's answer (`reconstruct/infer/shape.rs`).
    ProviderShapeLlamacpp,
    /// Rebuilt as the answer of a known server shape that has no reason of its own above
    /// (`reconstruct/infer/shape.rs`); `build.json`'s providers name the shape.
    ProviderShape,
    /// Some serving stacks render this request's prompt otherwise than the template, in a way
    /// the token count cannot show (the family's `FamilyRules::prompt_doubt`): rendered as the
    /// template does, and may not be the server's.
    PromptRenderDiffers,
}

impl Reason {
    /// The reason a server quirk names ([`Quirk::reason`]).
    pub fn of(quirk: &dyn Quirk) -> Option<Reason> {
        Reason::named(quirk.reason()?)
    }

    /// The reason of this stable name.
    pub fn named(name: &str) -> Option<Reason> {
        serde_json::from_value(serde_json::Value::from(name)).ok()
    }
}

/// A sample's certainty: the class and the reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fidelity {
    pub class: FidelityClass,
    #[serde(default)]
    pub reasons: Vec<Reason>,
    /// How many token streams were consistent with the answer (set when more than one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<usize>,
}

impl Fidelity {
    pub fn new(class: FidelityClass) -> Self {
        Fidelity {
            class,
            reasons: Vec::new(),
            candidates: None,
        }
    }

    /// Add a reason once.
    pub fn because(&mut self, reason: Reason) {
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    /// Lower the class to `class` if that is less certain than the current one.
    pub fn at_most(&mut self, class: FidelityClass) {
        if class > self.class {
            self.class = class;
        }
    }
}

impl Default for Fidelity {
    fn default() -> Self {
        Fidelity::new(FidelityClass::Unique)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_quirk_reason_is_a_reason() {
        for shape in crate::server::SHAPES {
            for quirk in shape.quirks.all() {
                if quirk.reason().is_some() {
                    assert!(Reason::of(quirk).is_some(), "{}", quirk.name());
                }
            }
        }
    }

    #[test]
    fn names_round_trip_through_serde() {
        for class in FidelityClass::ALL {
            let text = serde_json::to_string(&class).unwrap();
            assert_eq!(text, format!("\"{}\"", class.name()));
        }
        let reason = serde_json::to_string(&Reason::ServerRewritesToolCallIds).unwrap();
        assert_eq!(reason, "\"server_rewrites_tool_call_ids\"");
    }

    #[test]
    fn at_most_only_lowers() {
        let mut f = Fidelity::new(FidelityClass::Unique);
        f.at_most(FidelityClass::Lossy);
        f.at_most(FidelityClass::Ambiguous);
        assert_eq!(f.class, FidelityClass::Lossy);
    }
}
