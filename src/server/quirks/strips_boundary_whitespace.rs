//! A provider's stack strips the whitespace at one boundary of the answer's text fields: the
//! start or end of the reasoning, the start of the content, its end before the tool calls, or
//! its end at the end of the answer. Not a known server's quirk: the shape a provider's
//! convention adds (`reconstruct/infer/strips.rs`), where its own answers show it, and what the
//! simulator's `strips=` convention does (`sim/conventions/strips.rs`). One type per boundary
//! (`StripsAt<B>`, `B` one of [`Boundary`]), so each is its own quirk. Kimi's syntax only: the
//! boundaries are found by its markers.

use crate::model::family::kimi::{CALL_BEGIN, END_OF_TURN, SECTION_BEGIN, THINK_BEGIN, THINK_END};
use crate::model::family::Syntax;
use std::sync::{Mutex, OnceLock};

use crate::server::quirk::{Quirk, Quirks};
use crate::server::{ForwardInput, Parsed, ServerShape, Site, SiteInput};

/// One boundary of the answer's text fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Boundary {
    ReasoningStart,
    ReasoningEnd,
    /// The content's start (after the reasoning, or the answer's start without it).
    ContentStart,
    /// The content's end where tool calls follow.
    ContentEndBeforeCalls,
    /// The content's end where no tool call follows.
    ContentEnd,
}

impl Boundary {
    pub const ALL: [Boundary; 5] = [
        Boundary::ReasoningStart,
        Boundary::ReasoningEnd,
        Boundary::ContentStart,
        Boundary::ContentEndBeforeCalls,
        Boundary::ContentEnd,
    ];

    /// `reasoning_start`, … (the `strips=` list of a sim provider, the convention's name).
    pub const fn name(self) -> &'static str {
        match self {
            Boundary::ReasoningStart => "reasoning_start",
            Boundary::ReasoningEnd => "reasoning_end",
            Boundary::ContentStart => "content_start",
            Boundary::ContentEndBeforeCalls => "content_end_before_calls",
            Boundary::ContentEnd => "content_end",
        }
    }

    const fn of(b: u8) -> Boundary {
        match b {
            0 => Boundary::ReasoningStart,
            1 => Boundary::ReasoningEnd,
            2 => Boundary::ContentStart,
            3 => Boundary::ContentEndBeforeCalls,
            _ => Boundary::ContentEnd,
        }
    }

    /// Strip this boundary's whitespace from the answer's fields.
    pub fn strip(self, parsed: &mut Parsed) {
        let has_calls = !parsed.calls.is_empty();
        let field = match self {
            Boundary::ReasoningStart | Boundary::ReasoningEnd => &mut parsed.reasoning,
            Boundary::ContentEndBeforeCalls if !has_calls => return,
            Boundary::ContentEnd if has_calls => return,
            _ => &mut parsed.content,
        };
        let Some(text) = field.as_mut() else { return };
        let kept = match self {
            Boundary::ReasoningStart | Boundary::ContentStart => text.trim_start(),
            _ => text.trim_end(),
        };
        if kept.len() != text.len() {
            *text = kept.to_string();
        }
    }

    /// Where in the model's text (Kimi syntax, `thinking`: it begins with the reasoning) this
    /// boundary's whitespace sat: the byte it came right before.
    pub fn site(self, text: &str, thinking: bool) -> Option<usize> {
        let opened = if text.starts_with(THINK_BEGIN) {
            THINK_BEGIN.len()
        } else {
            0
        };
        let reasoning_end = [
            text.find(THINK_END),
            text.find(SECTION_BEGIN),
            text.find(CALL_BEGIN),
        ]
        .into_iter()
        .flatten()
        .min();
        let content_start = if thinking {
            text.find(THINK_END).map(|at| at + THINK_END.len())
        } else {
            Some(0)
        };
        match self {
            Boundary::ReasoningStart => thinking.then_some(opened),
            Boundary::ReasoningEnd => reasoning_end.filter(|_| thinking),
            Boundary::ContentStart => content_start,
            Boundary::ContentEndBeforeCalls => content_start
                .and_then(|start| text[start..].find(SECTION_BEGIN).map(|at| start + at)),
            Boundary::ContentEnd => {
                let start = content_start?;
                if text[start..].contains(SECTION_BEGIN) {
                    return None;
                }
                Some(text.strip_suffix(END_OF_TURN).map_or(text.len(), str::len))
            }
        }
    }

    /// The fidelity reason's stable name a sample carries while the count leaves this
    /// boundary's whitespace open (`reconstruct::Reason`).
    pub const fn reason(self) -> &'static str {
        match self {
            Boundary::ReasoningStart => "provider_strips_reasoning_start",
            Boundary::ReasoningEnd => "provider_strips_reasoning_end",
            Boundary::ContentStart => "provider_strips_content_start",
            Boundary::ContentEndBeforeCalls => "provider_strips_content_end_before_calls",
            Boundary::ContentEnd => "provider_strips_content_end",
        }
    }
}

/// The stack strips the whitespace at boundary `B` (`Boundary as u8`).
#[derive(Debug, Clone, Copy)]
pub struct StripsAt<const B: u8>;

impl<const B: u8> StripsAt<B> {
    pub const BOUNDARY: Boundary = Boundary::of(B);
}

impl<const B: u8> Quirk for StripsAt<B> {
    fn name(&self) -> &'static str {
        match Self::BOUNDARY {
            Boundary::ReasoningStart => "strips_reasoning_start",
            Boundary::ReasoningEnd => "strips_reasoning_end",
            Boundary::ContentStart => "strips_content_start",
            Boundary::ContentEndBeforeCalls => "strips_content_end_before_calls",
            Boundary::ContentEnd => "strips_content_end",
        }
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if input.syntax == Syntax::Kimi {
            Self::BOUNDARY.strip(parsed);
        }
    }

    fn sites(&self, _shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        if input.syntax != Syntax::Kimi {
            return Vec::new();
        }
        Self::BOUNDARY
            .site(text, input.thinking)
            .map(|at| Site {
                at,
                reason: Self::BOUNDARY.reason(),
            })
            .into_iter()
            .collect()
    }

    fn reason(&self) -> Option<&'static str> {
        Some(Self::BOUNDARY.reason())
    }
}

/// The quirk of each boundary, in [`Boundary::ALL`]'s order.
pub const STRIPS: [&dyn Quirk; 5] = [
    &StripsAt::<0>,
    &StripsAt::<1>,
    &StripsAt::<2>,
    &StripsAt::<3>,
    &StripsAt::<4>,
];

/// `base` with the quirk of `boundary` added (as its last): built once per pair and kept for
/// the process (a handful: each shape a provider is read or simulated under, by the boundaries
/// its conventions strip).
pub fn with_stripped(base: &'static ServerShape, boundary: Boundary) -> &'static ServerShape {
    type Key = (usize, Boundary);
    static SHAPES: OnceLock<Mutex<Vec<(Key, &'static ServerShape)>>> = OnceLock::new();
    let quirk = STRIPS[boundary as usize];
    if base.quirks.names().contains(&quirk.name()) {
        return base;
    }
    let key = (base as *const ServerShape as usize, boundary);
    let shapes = SHAPES.get_or_init(|| Mutex::new(Vec::new()));
    let mut shapes = match shapes.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some((_, shape)) = shapes.iter().find(|(k, _)| *k == key) {
        return shape;
    }
    let plus: &'static [&'static dyn Quirk] = Box::leak(Box::new([quirk]));
    let shape: &'static ServerShape = Box::leak(Box::new(ServerShape {
        quirks: Quirks::on(&base.quirks).plus(plus),
        ..*base
    }));
    shapes.push((key, shape));
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_boundary_is_found_where_its_whitespace_sat() {
        let text = "<think>r</think>c<|tool_calls_section_begin|>x";
        let after_close = text.find(THINK_END).map(|at| at + THINK_END.len());
        assert_eq!(Boundary::ReasoningStart.site(text, true), Some(7));
        assert_eq!(
            Boundary::ReasoningEnd.site(text, true),
            text.find(THINK_END)
        );
        assert_eq!(Boundary::ContentStart.site(text, true), after_close);
        assert_eq!(
            Boundary::ContentEndBeforeCalls.site(text, true),
            text.find(SECTION_BEGIN)
        );
        assert_eq!(Boundary::ContentEnd.site(text, true), None);
        let plain = "r</think>c<|im_end|>";
        assert_eq!(Boundary::ReasoningStart.site(plain, true), Some(0));
        assert_eq!(
            Boundary::ContentEnd.site(plain, true),
            Some(plain.len() - END_OF_TURN.len())
        );
        assert_eq!(Boundary::ContentEndBeforeCalls.site(plain, true), None);
        assert_eq!(Boundary::ReasoningStart.site("c", false), None);
        assert_eq!(Boundary::ContentStart.site("c", false), Some(0));
    }

    #[test]
    fn each_boundary_strips_only_its_own_side() {
        let mut parsed = Parsed {
            reasoning: Some("\n r \n".into()),
            content: Some("\n c \n".into()),
            ..Parsed::default()
        };
        Boundary::ReasoningStart.strip(&mut parsed);
        Boundary::ContentEnd.strip(&mut parsed);
        Boundary::ContentEndBeforeCalls.strip(&mut parsed);
        assert_eq!(parsed.reasoning.as_deref(), Some("r \n"));
        assert_eq!(parsed.content.as_deref(), Some("\n c"));
    }
}
