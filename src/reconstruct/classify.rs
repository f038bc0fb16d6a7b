//! The fidelity class of a reconstruction and the flags every non-exact sample carries: the
//! outcome of the synthesis check, what the declared server is known to destroy, another
//! family's markers, a cut that split a character. Each flag adds a reason and a warning, so a
//! sample is never non-exact without saying why.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use serde_json::Value;

use crate::completion::{Arguments, Completion};
use crate::model::family::{Family, ToolGrammar};
use crate::model::Profile;
use crate::pyjson::{self, DumpOptions};
use crate::server::{parser_traits, ParserTraits, ReadBackRules, ServerShape, Syntax};

use super::fidelity::{Fidelity, FidelityClass, Reason};
use super::synth::Synthesis;

/// A finished answer with tool calls: the model may have ended its turn inside the last call
/// (K2 writes the end-of-turn token before `<|tool_call_end|>`, and generation stops there), so
/// the markers after the last call's text may never have been written. Each candidate also
/// without them, one more each time, back to the call's opener; the shape and the count decide.
pub(super) fn with_unclosed_last_call(
    texts: Vec<String>,
    grammar: &ToolGrammar,
    end_of_turn: &str,
) -> Vec<String> {
    let mut out = texts.clone();
    for text in &texts {
        let Some(mut open) = text
            .strip_suffix(end_of_turn)
            .filter(|_| !end_of_turn.is_empty())
        else {
            continue;
        };
        let stops = [grammar.call_begin(), grammar.section_begin];
        while let Some(marker) = grammar
            .markers
            .iter()
            .find(|m| !m.is_empty() && open.ends_with(**m) && !stops.contains(*m))
        {
            open = &open[..open.len() - marker.len()];
            let unclosed = format!("{open}{end_of_turn}");
            if !out.contains(&unclosed) {
                out.push(unclosed);
            }
        }
    }
    out
}

/// For a `length` cut with tools declared: where in the tool section the cut may have fallen
/// (after the last call — on the section's end, or the next call's begin —, inside the last
/// call's arguments — a streamed answer shows what was sent —, right after the section opener).
pub(super) fn with_cut_tails(texts: Vec<String>, grammar: &ToolGrammar) -> Vec<String> {
    let ToolGrammar {
        section_begin,
        first_call,
        call_end,
        arguments_end,
        section_end,
        next_call,
        ..
    } = *grammar;
    let mut out = Vec::with_capacity(texts.len() * 4);
    for text in texts {
        let mut variants = vec![text.clone()];
        let open = if section_end.is_empty() {
            Some(text.as_str())
        } else {
            text.strip_suffix(section_end)
        };
        match open {
            Some(open) if open.ends_with(call_end) => {
                if !section_end.is_empty() {
                    variants.push(open.to_string());
                }
                for next in next_call {
                    variants.push(format!("{open}{next}"));
                }
                if let Some(in_call) = open.strip_suffix(call_end) {
                    variants.push(in_call.to_string());
                    // Cut inside the arguments: what closes them was not written either.
                    if let Some(in_arguments) = in_call
                        .strip_suffix(arguments_end)
                        .filter(|_| !arguments_end.is_empty())
                    {
                        variants.push(in_arguments.to_string());
                    }
                }
            }
            _ if !text.contains(section_begin) => {
                variants.push(format!("{text}{section_begin}"));
                if let Some(unspaced) = text.strip_suffix(' ') {
                    // the space a detokenizer puts before an added token (vLLM's default)
                    variants.push(format!("{unspaced}{section_begin}"));
                }
                // … or right after what the grammar puts after the opener (Kimi's first call
                // begin: the servers that send nothing of a call cut there show the same answer,
                // SGLang 0.5.23, vLLM 0.33; DeepSeek-V3's forced call begin).
                if !first_call.is_empty() {
                    variants.push(format!("{text}{section_begin}{first_call}"));
                }
            }
            _ => {}
        }
        for v in variants {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

fn reported(completion: &Completion) -> Option<usize> {
    completion
        .usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .map(|n| n as usize)
}

/// The ids and class from the synthesis outcome.
pub(super) fn classify(
    profile: &Profile,
    texts: &[String],
    completion: &Completion,
    found: Synthesis,
    shape: &ServerShape,
    rules: &ReadBackRules,
    warnings: &mut Vec<String>,
) -> (Vec<u32>, Fidelity) {
    let server = shape.describe();
    if let Some(classified) = partial_character_class(&found, &server, warnings) {
        return classified;
    }
    match (found.consistent, &found.ids) {
        (1, Some(ids)) => (ids.clone(), Fidelity::new(FidelityClass::Unique)),
        (n, Some(ids)) if n > 1 => {
            let fidelity = ambiguous(n, &found.open, completion, &server, warnings);
            (ids.clone(), fidelity)
        }
        _ => {
            // Nothing consistent: the most likely form, flagged.
            let ids = fallback(profile, texts, completion);
            // vLLM's deepseek_v3 and hermes parsers are regexes over finished calls: an
            // unfinished one is never sent whole, whatever the shape does with Kimi's.
            let drops_unfinished_call = rules.drops_unfinished_call
                || parser(profile).is_none_or(|p| p.drops_unfinished_call);
            let fidelity = inconsistent(
                &found,
                drops_unfinished_call,
                completion,
                ids.len(),
                &server,
                warnings,
            );
            (ids, fidelity)
        }
    }
}

/// A cut that may have split a character: the ids end before its partial bytes, or, where a
/// stream without them fits too, that stream, ambiguous.
fn partial_character_class(
    found: &Synthesis,
    server: &str,
    warnings: &mut Vec<String>,
) -> Option<(Vec<u32>, Fidelity)> {
    let partial = found.partial.as_ref()?;
    let warning = "truncated mid-character: the length cut may have split a multi-byte character, whose partial-byte ids the text cannot show";
    match (found.consistent, &found.ids) {
        (0, _) | (_, None) => {
            let mut fidelity = Fidelity::new(FidelityClass::TruncatedMidCharacter);
            fidelity.because(Reason::PartialCharacter);
            warnings.push(format!("{warning}; the ids end before them"));
            Some((partial.clone(), fidelity))
        }
        (n, Some(ids)) => {
            let mut fidelity = Fidelity::new(FidelityClass::Ambiguous);
            fidelity.candidates = Some(usize::try_from(n).unwrap_or(usize::MAX) + 1);
            fidelity.because(Reason::PartialCharacter);
            for reason in &found.open {
                fidelity.because(*reason);
            }
            warnings.push(format!(
                "ambiguous: {warning}, and a stream without them fits this response from {server} too; chose that one"
            ));
            Some((ids.clone(), fidelity))
        }
    }
}

/// `n` streams fit and nothing decided between them (`open`: the reasons left open).
fn ambiguous(
    n: u64,
    open: &[Reason],
    completion: &Completion,
    server: &str,
    warnings: &mut Vec<String>,
) -> Fidelity {
    let mut fidelity = Fidelity::new(FidelityClass::Ambiguous);
    fidelity.candidates = Some(usize::try_from(n).unwrap_or(usize::MAX));
    for reason in open {
        fidelity.because(*reason);
    }
    let why = match reported(completion) {
        None => "the response has no usage.completion_tokens".to_string(),
        Some(k) => format!("usage.completion_tokens = {k} does not decide between them"),
    };
    let open = match names(open) {
        names if names.is_empty() => String::new(),
        names => format!(" ({names})"),
    };
    warnings.push(format!(
        "ambiguous: {n} token streams fit this response from {server}{open} and {why}; chose the most likely form"
    ));
    fidelity
}

/// No stream fits: why (a dropped unfinished call, the count, the fields), for a fallback of
/// `rebuilt` ids.
fn inconsistent(
    found: &Synthesis,
    drops_unfinished_call: bool,
    completion: &Completion,
    rebuilt: usize,
    server: &str,
    warnings: &mut Vec<String>,
) -> Fidelity {
    let mut fidelity = Fidelity::new(FidelityClass::Inconsistent);
    match (found.short_by, found.fields_agree) {
        (Some(gap), _) if drops_unfinished_call => {
            fidelity = Fidelity::new(FidelityClass::Lossy);
            fidelity.because(Reason::CutInsideToolSection);
            warnings.push(format!(
                "length cut inside the tool section: {server} dropped the unfinished call ({gap} tokens the answer does not show); the ids end before it"
            ));
        }
        (_, true) => {
            fidelity.because(Reason::UsageDisagrees);
            warnings.push(format!(
                "inconsistent: usage.completion_tokens = {} fits no token stream that {server} would have answered this way (the rebuild has {rebuilt})",
                reported(completion).unwrap_or_default(),
            ));
        }
        (_, false) => {
            fidelity.because(Reason::ForwardMismatch);
            warnings.push(format!(
                "inconsistent: no token stream gives this answer through {server} ({} differs); the ids are the most likely reading, not checked",
                found.mismatch.as_deref().unwrap_or("the answer")
            ));
        }
    }
    fidelity
}

/// The traits of the servers' parsers for the profile's family, if servers know its syntax.
fn parser(profile: &Profile) -> Option<&'static ParserTraits> {
    profile.family.syntax().map(parser_traits)
}

fn names(reasons: &[Reason]) -> String {
    reasons
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate whose length matches the count, else the first.
fn fallback(profile: &Profile, texts: &[String], completion: &Completion) -> Vec<u32> {
    let encoded: Vec<Vec<u32>> = texts.iter().map(|t| profile.tokenizer.encode(t)).collect();
    let n = reported(completion);
    encoded
        .iter()
        .find(|ids| Some(ids.len()) == n)
        .or(encoded.first())
        .cloned()
        .unwrap_or_default()
}

/// What the server destroyed that nothing in the answer settles.
pub(super) fn server_losses(
    profile: &Profile,
    shape: &ServerShape,
    rules: &ReadBackRules,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    if completion.tool_calls.is_empty() {
        return;
    }
    let syntax = profile.family.syntax();
    if syntax.is_some_and(Syntax::ids_in_stream) {
        let renumbered = completion.tool_calls.iter().any(|c| {
            !c.id
                .as_deref()
                .is_some_and(|id| profile.is_native_tool_call_id(id))
        });
        if renumbered || rules.rewrites_call_ids {
            fidelity.at_most(FidelityClass::Lossy);
            fidelity.because(Reason::ServerRewritesToolCallIds);
            warnings.push(
                "lossy: the server replaced the model's tool-call ids; they were rebuilt as functions.NAME:N numbered over the conversation, which the model may not have written"
                    .to_string(),
            );
        }
        if rules.reserializes_arguments
            && fidelity.class == FidelityClass::Inconsistent
            && completion.tool_calls.iter().any(looks_reserialized)
        {
            fidelity.because(Reason::ArgumentsReserialized);
            warnings.push(
                "the arguments look re-serialized by the server (coerced to the schema): the model's own text is lost"
                    .to_string(),
            );
        }
    } else if parser(profile).is_some_and(|p| p.rewrites_calls) && shape.parses {
        // hermes (Qwen3) parses the arguments and writes them with json.dumps, and mints random
        // call ids (not part of the family's token stream). deepseek_v3 keeps the raw
        // arguments: nothing lost there. Where the forward check and the count confirmed the
        // template's serialization the stream is settled; otherwise the loss is why.
        // A parser that converts values by the schema (qwen3_coder) settles nothing of a typed
        // value's spelling (`5.0` and `5` read back alike): never exact with one.
        let typed = parser(profile).is_some_and(|p| p.converts_values_by_schema)
            && completion.tool_calls.iter().any(has_typed_value);
        if typed {
            fidelity.at_most(FidelityClass::Lossy);
            fidelity.because(Reason::ArgumentsReserialized);
            warnings.push(
                "lossy: the server converted the tool-call values by the schema; a value that is not a string was rebuilt as JSON, the model's own spelling (5.0, 05, True) may differ"
                    .to_string(),
            );
            return;
        }
        if fidelity.class.is_exact() && shape.known {
            return;
        }
        // Ambiguous for another reason only (whitespace-only content it nulled, a cut's tail):
        // that warning says what is open. (Candidates that differ in nothing the synthesis
        // names are the argument spellings.)
        let spelling_open = fidelity.reasons.is_empty()
            || fidelity.reasons.contains(&Reason::ArgumentsReserialized);
        if fidelity.class == FidelityClass::Ambiguous && shape.known && !spelling_open {
            return;
        }
        fidelity.at_most(FidelityClass::Lossy);
        fidelity.because(Reason::ArgumentsReserialized);
        fidelity.because(Reason::ServerRewritesToolCallIds);
        let syntax = profile.family.syntax().map_or("its", Syntax::tool_parser);
        warnings.push(format!(
            "lossy: the server parsed the tool calls ({syntax} tool parser: arguments re-serialized unstreamed, the call wrapper's spacing dropped streamed or not); rebuilt as the template writes them, the model's own spacing and escapes may differ"
        ));
    }
}

/// Whether the call's arguments hold a top-level value that is not a string (or are not an
/// object at all).
fn has_typed_value(call: &crate::completion::ToolCall) -> bool {
    let parsed;
    let value = match &call.arguments {
        Arguments::Object(value) => value,
        Arguments::Raw(text) => match serde_json::from_str::<Value>(text) {
            Ok(value) => {
                parsed = value;
                &parsed
            }
            Err(_) => return true,
        },
    };
    value
        .as_object()
        .is_none_or(|parameters| parameters.values().any(|v| !v.is_string()))
}

/// `json.dumps` with its default separators gives back exactly this text.
fn looks_reserialized(call: &crate::completion::ToolCall) -> bool {
    match &call.arguments {
        Arguments::Raw(text) => serde_json::from_str::<Value>(text)
            .map(|v| pyjson::dumps_json(&v, &DumpOptions::default()) == *text)
            .unwrap_or(false),
        Arguments::Object(_) => true,
    }
}

/// [`family_markers`], and one automaton that finds every one of them in a text in one pass
/// (a `contains` per marker scanned each long answer some twenty times, once per rebuild).
static FAMILY_MARKERS: LazyLock<(Vec<&'static str>, Option<AhoCorasick>)> = LazyLock::new(|| {
    let markers = family_markers();
    let searcher = AhoCorasick::new(&markers).ok();
    (markers, searcher)
});

/// Distinctive markers of every family's chat format (each family's own list, in family order).
fn family_markers() -> Vec<&'static str> {
    let mut markers: Vec<&'static str> = Vec::new();
    for family in Family::all() {
        for marker in family.spec().distinctive_markers {
            if !markers.contains(marker) {
                markers.push(marker);
            }
        }
    }
    markers
}

/// Streamed through a parser that appends the text between and after calls to `content`
/// (`streams`): where an answer has calls and content, the model may have written part of that
/// content after the section, the same answer at the same count as the rebuild's all-before.
pub(super) fn text_after_calls(
    streams: bool,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let content = completion.content.as_deref().unwrap_or_default();
    if !streams || completion.tool_calls.is_empty() || content.is_empty() {
        return;
    }
    fidelity.at_most(FidelityClass::Ambiguous);
    fidelity.because(Reason::StreamedTextAfterCalls);
    warnings.push(
        "ambiguous: a streamed answer with tool calls: the server appends text written between or after the calls to content, so which part of content came before them is not shown (rebuilt all before)"
            .to_string(),
    );
}

/// An answer holding another family's markers does not come from the declared model.
pub(super) fn foreign_markers(
    profile: &Profile,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let own = profile.tokenizer.special_tokens();
    let mut texts: Vec<&str> = Vec::new();
    texts.extend(completion.reasoning.as_deref());
    texts.extend(completion.content.as_deref());
    for call in &completion.tool_calls {
        if let Arguments::Raw(a) = &call.arguments {
            texts.push(a);
        }
        texts.extend(call.id.as_deref());
    }
    let (markers, searcher) = &*FAMILY_MARKERS;
    let mut shown = vec![false; markers.len()];
    for text in &texts {
        match searcher {
            Some(searcher) => {
                for m in searcher.find_overlapping_iter(*text) {
                    shown[m.pattern().as_usize()] = true;
                }
            }
            None => {
                for (marker, shown) in markers.iter().zip(shown.iter_mut()) {
                    *shown |= text.contains(marker);
                }
            }
        }
    }
    let found: Vec<&str> = markers
        .iter()
        .zip(&shown)
        .filter(|&(m, &shown)| shown && !own.iter().any(|o| o == m))
        .map(|(m, _)| *m)
        .collect();
    if !found.is_empty() {
        fidelity.at_most(FidelityClass::Inconsistent);
        fidelity.because(Reason::ForeignMarkers);
        warnings.push(format!(
            "inconsistent: the answer holds another model family's markers ({}) — is --model/--profile {} the model that answered?",
            found.join(", "),
            profile.name
        ));
    }
}

/// A server that reports `tool_calls` also for a `length` cut (vLLM 0.11;
/// [`ReadBackRules::cut_hidden_by_tool_calls`], `hides` false where the synthesis probed the cut
/// itself): unless the count is below `max_tokens`, the answer may have been cut after its last
/// complete call, and what followed cannot be told from it.
pub(super) fn cut_hidden_by_tool_calls(
    shape: &ServerShape,
    hides: bool,
    completion: &Completion,
    max_tokens: Option<u32>,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    if !hides || completion.finish_reason.as_deref() != Some("tool_calls") {
        return;
    }
    let below_limit = match (max_tokens, reported(completion)) {
        (Some(limit), Some(n)) => n < limit as usize,
        _ => false,
    };
    if below_limit {
        return;
    }
    fidelity.at_most(FidelityClass::Lossy);
    fidelity.because(Reason::CutInsideToolSection);
    warnings.push(format!(
        "lossy: {} reports finish_reason tool_calls also when max_tokens cut the answer, and the count reached max_tokens (or either is unknown): the tokens after the last complete call cannot be told from the answer",
        shape.describe()
    ));
}

/// A `length` cut that split a multi-byte character: the last token is a partial-byte id.
pub(super) fn partial_character(
    cut: bool,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    if !cut {
        return;
    }
    let last = completion
        .tool_calls
        .last()
        .and_then(|c| match &c.arguments {
            Arguments::Raw(a) => Some(a.as_str()),
            Arguments::Object(_) => None,
        })
        .or(completion.content.as_deref().filter(|c| !c.is_empty()))
        .or(completion.reasoning.as_deref());
    if last.is_some_and(|t| t.trim_end().ends_with('\u{FFFD}')) {
        fidelity.at_most(FidelityClass::TruncatedMidCharacter);
        fidelity.because(Reason::PartialCharacter);
        warnings.push(
            "truncated mid-character: the length cut split a multi-byte character; the last token is a partial-byte id the text cannot show"
                .to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DS_CALL: &str = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": \"umbrella\"}\n```<｜tool▁call▁end｜>";

    #[test]
    fn cut_tails_hold_the_grammar_forced_opener_and_the_unclosed_arguments() {
        // deepseek_v3/vllm-0.33.0/*/cut_tool_section_opener/001: the truth is the content and
        // the two markers that always open a DeepSeek-V3 tool section.
        let grammar = Family::DEEPSEEK_V3.spec().tool_grammar.unwrap();
        let tails = with_cut_tails(vec!["Let me check.".into()], &grammar);
        assert!(tails.contains(&"Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>".into()));
        // …/stream/…/cut_arguments/002: cut inside the arguments, fence and close never written.
        let closed = format!("<｜tool▁calls▁begin｜>{DS_CALL}<｜tool▁calls▁end｜>");
        let tails = with_cut_tails(vec![closed], &grammar);
        assert!(tails.contains(
            &"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": \"umbrella\"}".into()
        ));
    }
}
