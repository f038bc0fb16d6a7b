//! From a request and the server's answer to the exact prompt and completion token ids.
//!
//! The server returns text that its parsers reshaped (`</think>` cut out, tool-call markers
//! turned into a `tool_calls` array, ids rewritten, spaces inserted). Reconstruction inverts that:
//! [`turn`] reads the answer back into what the model wrote ([`AssistantTurn`] candidates), the
//! profile writes each candidate in the family's native syntax, and [`choose`] picks the candidate
//! the server's own token count confirms — or the template's form, marked ambiguous.

mod choose;
mod classify;
pub mod despace;
pub mod fidelity;
mod from_run;
pub mod infer;
mod leak;
mod literal;
mod spellings;
mod synth;
mod turn;
mod undeclared;
mod upstream;

pub use fidelity::{Fidelity, FidelityClass, Reason};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::ServerKind;
use crate::completion::{Completion, CompletionError};
use crate::model::family::PromptStack;
use crate::model::template::RENDER_TIME;
use crate::model::{ModelError, Profile, RenderInput};
use crate::server::{self, ForwardInput, InverseInput, ParserTraits, ReadBackRules, ServerShape};

/// How the endpoint shaped its text: the server shape (kind + version) and its detokenizer's
/// spaces. Every field defaults, so a run manifest or a line's `options` can carry any subset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReconstructOptions {
    /// The server inserts a space on each side of every added token (vLLM's
    /// `spaces_between_special_tokens`, on by default): undo it.
    #[serde(default)]
    pub spaces_around_special_tokens: bool,
    /// Which server answered (`generic`: unknown — nothing assumed, only the count checked).
    #[serde(default)]
    pub kind: ServerKind,
    /// Its version (`0.33.0`, `0.11.2`, …); `None`: the newest known shape of `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The answer was streamed (and assembled from its chunks); `None`: the request's `stream`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The provider re-serialized the tool-call arguments (`reconstruct/infer/arguments.rs`):
    /// every spelling of each value is a candidate and the count decides.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub arguments_reserialized: bool,
    /// The provider's answers show its stack puts no spaces around added tokens
    /// (`reconstruct/infer/negative.rs`): a space where one sat is the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upstream_unspaced: bool,
    /// The provider's answers show its template ends the prompt with the reasoning opener
    /// (`reconstruct/infer/negative.rs`): the model does not generate it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upstream_prompts_think: bool,
}

impl ReconstructOptions {
    /// The declared server's shape.
    pub fn shape(&self) -> &'static ServerShape {
        server::shape(self.kind, self.server_version.as_deref())
    }
}

/// What the serving stack rendered from (the chat-completions request, as sent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExchangeRequest {
    pub messages: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<Map<String, Value>>,
    /// Whether the answer was streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The request's `max_tokens` (tells a finished answer from a cut one where the server's
    /// `finish_reason` does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

impl ExchangeRequest {
    /// The render input for the prompt (with the generation prompt).
    pub fn render_input(&self) -> RenderInput<'_> {
        RenderInput {
            messages: &self.messages,
            tools: self.tools.as_deref(),
            add_generation_prompt: true,
            chat_template_kwargs: self.chat_template_kwargs.as_ref(),
        }
    }
}

/// The rebuilt token ids of one exchange.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    pub prompt_ids: Vec<u32>,
    pub completion_ids: Vec<u32>,
    /// Everything a user should know about this sample: disagreements with the server's usage,
    /// ambiguity, special-token literals in text.
    pub warnings: Vec<String>,
    /// More than one token stream fits the response and nothing decided between them.
    #[serde(skip)]
    pub ambiguous: bool,
    /// How certain the ids are, machine-readable (every non-exact class also has a warning).
    pub fidelity: Fidelity,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconstructError {
    #[error("response: {0}")]
    Response(#[from] CompletionError),
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Rebuild prompt and completion ids for one exchange.
///
/// Candidates come from reading the answer back ([`turn`]) and, for a `length` cut, from the
/// places the cut may have fallen. With a known server shape each candidate is sent forward
/// through it ([`synth`]): only streams the server would have answered exactly so, with the
/// reported count, survive — one → `unique`, several → `ambiguous`, none → `inconsistent`. With
/// the `generic` shape the count alone decides ([`choose`]). Destructions nothing settles (ids a
/// server rewrites, arguments it re-serializes, a call it dropped) make the sample `lossy`.
pub fn reconstruct(
    profile: &Profile,
    request: &ExchangeRequest,
    response: &Value,
    options: &ReconstructOptions,
) -> Result<Reconstruction, ReconstructError> {
    reconstruct_as(profile, request, response, options, options.shape())
}

/// [`reconstruct`] for an answer from `shape` (one the options cannot name: defined outside the
/// crate, with quirks of its own); `options.kind` and `options.server_version` are not read.
pub fn reconstruct_as(
    profile: &Profile,
    request: &ExchangeRequest,
    response: &Value,
    options: &ReconstructOptions,
    shape: &ServerShape,
) -> Result<Reconstruction, ReconstructError> {
    let completion = Completion::from_response(response)?;
    reconstruct_parsed(profile, request, &completion, options, shape)
}

/// [`reconstruct_as`] for an answer already read ([`Completion::from_response`]): `build` reads
/// each record's answer once and rebuilds from that.
pub fn reconstruct_parsed(
    profile: &Profile,
    request: &ExchangeRequest,
    completion: &Completion,
    options: &ReconstructOptions,
    shape: &ServerShape,
) -> Result<Reconstruction, ReconstructError> {
    let mut warnings = Vec::new();

    let (prompt_ids, prompt_count) = prompt_ids(profile, request, completion, &mut warnings)?;

    // vLLM's spaces around added tokens come from the slow (tiktoken-based) Kimi tokenizer's
    // detokenizer; fast tokenizers (Qwen3, DeepSeek-V3) do not insert them.
    let options = &ReconstructOptions {
        spaces_around_special_tokens: options.spaces_around_special_tokens
            && profile.family.spec().detokenizer_spaces,
        ..options.clone()
    };
    let x = Exchange {
        profile,
        request,
        completion,
        options,
        shape,
        rules: shape.quirks.read_back_rules(),
        stream: options.stream.or(request.stream).unwrap_or(false),
        tools_declared: request.tools.as_ref().is_some_and(|t| !t.is_empty()),
        prompt_ids: &prompt_ids,
    };
    let mut read = read_backs(&x);
    let turns = candidate_turns(&x, &mut read, &mut warnings);
    let cut = completion.finish_reason.as_deref() == Some("length") || read.cut_in_section;
    let synthesized = shape.known && profile.family.syntax().is_some();
    let (texts, spellings_settled) = candidate_texts(&x, &read, &turns, cut, synthesized)?;
    let (mut completion_ids, mut fidelity) = if synthesized {
        synthesize(&x, &read, &texts, cut, &mut warnings)
    } else {
        choose_by_usage(&x, &texts, &mut warnings)
    };
    if !spellings_settled && fidelity.class.is_exact() {
        fidelity.at_most(FidelityClass::Ambiguous);
        fidelity.because(Reason::ArgumentsReserialized);
        warnings.push(
            "ambiguous: the server re-serialized the tool-call arguments and not every spelling the model may have written could be tried (too many separators, or a float whose digits json.loads normalized)"
                .to_string(),
        );
    }
    flag(&x, &read, cut, &mut fidelity, &mut warnings);

    let mut ambiguous = fidelity.candidates.is_some();
    if let Some(server_ids) = &completion.completion_token_ids {
        ambiguous = false;
        fidelity = settle_by_server_ids(server_ids, &mut completion_ids, &mut warnings);
    }
    if let Some(counted) = prompt_count {
        // After the server-ids block: completion ids do not settle the prompt.
        flag_prompt_count(&x, counted, &mut fidelity, &mut warnings);
    }
    if completion.completion_token_ids.is_none() {
        upstream::flag_unnamed_upstream(&x, prompt_count, &mut fidelity, &mut warnings);
    }
    undeclared::flag_hidden_by_known_shapes(&x, &completion_ids, &mut fidelity, &mut warnings);
    flag_content_parts(&x, completion, &mut fidelity, &mut warnings);
    flag_prompt_doubt(&x, completion, &mut fidelity, &mut warnings);
    Ok(Reconstruction {
        prompt_ids,
        completion_ids,
        warnings,
        ambiguous,
        fidelity,
    })
}

/// The turns every read-back answer could have been written as (the stream's own reshaping
/// undone first); each warning once.
fn candidate_turns(
    x: &Exchange,
    read: &mut ReadBacks,
    warnings: &mut Vec<String>,
) -> Vec<turn::Candidate> {
    let mut turns = Vec::new();
    for mut answer in std::mem::take(&mut read.answers) {
        undo_stream(x, read, &mut answer);
        turns.extend(turn::candidates(
            x.profile, x.request, &answer, x.options, warnings,
        ));
    }
    let mut said = std::collections::HashSet::new();
    warnings.retain(|w| said.insert(w.clone()));
    turns
}

/// The server's own ids settle what the text could not: the text rebuild's doubts go, and the
/// server's ids are used where they differ.
fn settle_by_server_ids(
    server_ids: &[u32],
    completion_ids: &mut Vec<u32>,
    warnings: &mut Vec<String>,
) -> Fidelity {
    const DOUBTS: [&str; 4] = ["ambiguous", "lossy", "inconsistent", "truncated"];
    warnings.retain(|w| !DOUBTS.iter().any(|d| w.starts_with(d)));
    let mut fidelity = Fidelity::new(FidelityClass::ExactByServerIds);
    fidelity.because(Reason::ServerIds);
    if server_ids != completion_ids.as_slice() {
        warnings.push(format!(
            "server token ids differ from the reconstruction (first difference at position {}); using the server's ids",
            first_difference(server_ids, completion_ids)
        ));
        fidelity.because(Reason::ServerIdsDiffer);
        *completion_ids = server_ids.to_vec();
    }
    fidelity
}

/// The server counted `counted` prompt tokens, not the rendered prompt's length.
fn flag_prompt_count(
    x: &Exchange,
    counted: u64,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    fidelity.because(Reason::PromptTokensDisagree);
    if x.rules.prompt_count_is_render {
        fidelity.at_most(FidelityClass::Inconsistent);
        warnings.push(format!(
            "inconsistent: {} counts the prompt it rendered, {counted} tokens, and the prompt rendered here has {}: the server rendered another prompt (its template, or a tool handler's system message), so the prompt ids are not what the model saw",
            x.shape.describe(),
            x.prompt_ids.len()
        ));
    }
}

/// One exchange as the steps of [`reconstruct_as`] read it.
struct Exchange<'a> {
    profile: &'a Profile,
    request: &'a ExchangeRequest,
    /// The answer as received.
    completion: &'a Completion,
    /// With spaces around added tokens only where the family's detokenizer puts them.
    options: &'a ReconstructOptions,
    shape: &'a ServerShape,
    /// What the shape's quirks say of reading its answers back.
    rules: ReadBackRules,
    stream: bool,
    tools_declared: bool,
    prompt_ids: &'a [u32],
}

/// The answers read back from the one received (each one the candidates start from), and what
/// reading them back learned about the stream.
struct ReadBacks {
    answers: Vec<Completion>,
    /// Quirks whose inverse gave more than one answer.
    open_quirks: Vec<&'static dyn server::Quirk>,
    /// The shape leaks its tool-section buffer into a streamed answer's content (vLLM 0.11.2).
    leaks: bool,
    /// The leak was there: the section was closed.
    closed_section: bool,
    /// The leak was cut: the most calls known from their streamed first lines only.
    leak_streamed_only: usize,
    /// `tool_calls` was reported, but the cut fell inside the section.
    cut_in_section: bool,
    /// The first token was streamed as reasoning, the rest as content.
    first_token_mode: bool,
    /// Streamed by a shape whose stream is its own code (vLLM 0.11), tools declared or not.
    stepwise: bool,
}

/// What the server could have been sent, read back from its answer: the reasoning of a
/// non-thinking turn moved back, the calls read from a stream's leak, each quirk's inverse.
fn read_backs(x: &Exchange) -> ReadBacks {
    let (profile, request, completion, shape) = (x.profile, x.request, x.completion, x.shape);
    let rules = &x.rules;
    // A reasoning parser that ignores `thinking=false` (vLLM 0.11's `kimi_k2`, DeepSeek-R1's)
    // files the whole answer of a non-thinking turn under reasoning: read it back as content.
    let thinking = profile.thinking_enabled(request.chat_template_kwargs.as_ref());
    let read_back = if rules.reasoning_when_thinking_off
        && !thinking
        && completion.content.as_deref().is_none_or(str::is_empty)
        && completion.tool_calls.is_empty()
    {
        let mut moved = completion.clone();
        moved.content = moved.reasoning.take();
        moved
    } else {
        completion.clone()
    };
    // The leak and the stepwise stream are those of a ported streaming parser (vLLM 0.11.2's).
    let ported = parser(profile).is_some_and(|p| p.stream_ported);
    let leaks = rules.section_buffer_in_content && x.stream && x.tools_declared && ported;
    let leaked = if leaks {
        leak::read_back(&read_back, x.options.spaces_around_special_tokens)
    } else {
        Vec::new()
    };
    // vLLM 0.11 reports `tool_calls` for a cut answer too; streamed, the leak says whether the
    // section was closed: calls without it mean the cut fell inside the section.
    let closed_section = !leaked.is_empty();
    // The section buffer passed its limit and was cut: the calls not in what is left are known
    // from their streamed first lines only (the whitespace around them too).
    let leak_streamed_only = leaked.iter().map(|c| c.streamed_only).max().unwrap_or(0);
    // A count below the request's limit says the answer finished (no leak then means the
    // parser never held the section: the opener was the first token, or it left a long one).
    let below_limit = match (request.max_tokens, usage_count(completion)) {
        (Some(limit), Some(n)) => n < u64::from(limit),
        _ => false,
    };
    let cut_in_section = leaks
        && !closed_section
        && !below_limit
        && !completion.tool_calls.is_empty()
        && completion.finish_reason.as_deref() == Some("tool_calls");
    let bases = if leaked.is_empty() {
        vec![read_back]
    } else {
        leaked.into_iter().map(|l| l.completion).collect()
    };
    // What each quirk could have hidden behind the answer: every answer its inverse gives is read
    // back.
    let inverse = InverseInput {
        stream: x.stream,
        spaces: x.options.spaces_around_special_tokens,
        tools_declared: x.tools_declared,
    };
    let mut answers = Vec::new();
    let mut open_quirks = Vec::new();
    for base in bases {
        let (inverted, open) = server::quirk::invert(&shape.quirks, base, &inverse);
        answers.extend(inverted);
        open_quirks.extend(open);
    }
    ReadBacks {
        answers,
        open_quirks,
        leaks,
        closed_section,
        leak_streamed_only,
        cut_in_section,
        first_token_mode: leaks
            && rules.first_token_as_reasoning
            && closes_reasoning(profile, x.prompt_ids),
        stepwise: rules.stream_by_token && x.stream && ported,
    }
}

/// Undo, on one read-back answer, what a stream of its own code (vLLM 0.11.2's) did to it.
fn undo_stream(x: &Exchange, read: &ReadBacks, read_back: &mut Completion) {
    let (completion, rules) = (x.completion, &x.rules);
    let spaces = x.options.spaces_around_special_tokens;
    if read.leaks && spaces {
        // Streamed ids start with the joining space after `<|tool_call_begin|>`.
        for call in &mut read_back.tool_calls {
            if let Some(id) = &mut call.id {
                *id = id.trim().to_string();
            }
        }
    }
    if read.cut_in_section {
        read_back.finish_reason = Some("length".to_string());
    }
    if read.stepwise && spaces {
        // The deltas vLLM 0.11 drops took their joining space with them: put it back, so the
        // read-back (which removes one joining space at each added token) keeps the model's own.
        // (With the first token as reasoning, the model's `</think>` stays in the content.)
        let closed = completion.content.as_deref().is_some_and(|c| !c.is_empty())
            || !completion.tool_calls.is_empty();
        if rules.drops_space_before_think_end && closed && !read.first_token_mode {
            if let Some(reasoning) = &mut read_back.reasoning {
                reasoning.push(' ');
            }
        }
        if read.leaks && rules.drops_space_before_section && !read_back.tool_calls.is_empty() {
            read_back.content.get_or_insert_with(String::new).push(' ');
        }
    }
    if read.first_token_mode {
        // The first token was streamed as reasoning, the rest as content: one text again.
        let first = read_back.reasoning.take().unwrap_or_default();
        let opener_first = first.trim_start_matches(' ') == server::kimi::SECTION_BEGIN;
        if opener_first && !read_back.tool_calls.is_empty() {
            // The opener went to reasoning, so the tool parser never held the section: the calls
            // are all there is (what it sent as content is joining spaces around markers).
            read_back.content = None;
        } else {
            let mut text = first;
            text.push_str(read_back.content.as_deref().unwrap_or_default());
            read_back.content = Some(text);
        }
    }
}

/// Every candidate completion text: each candidate turn in the family's syntax, and what the
/// shape and a cut could have hidden beside it. False with them: some argument spellings could
/// not be tried.
fn candidate_texts(
    x: &Exchange,
    read: &ReadBacks,
    turns: &[turn::Candidate],
    cut: bool,
    synthesized: bool,
) -> Result<(Vec<String>, bool), ReconstructError> {
    let (profile, request, completion, shape) = (x.profile, x.request, x.completion, x.shape);
    let stream = x.stream;
    let mut texts = Vec::with_capacity(turns.len());
    for candidate in turns {
        let text = match &candidate.verbatim {
            Some(text) => text.clone(),
            None => profile.completion_text(&request.render_input(), &candidate.turn)?,
        };
        texts.push(text);
    }
    let traits = parser(profile);
    let separators = traits.is_some_and(|p| p.streams_call_separators);
    if separators && stream && !completion.tool_calls.is_empty() {
        // vLLM's streaming deepseek_v3 parser leaks the `\n` between calls (and, cut, the one
        // after the last call) into `content`: the model's content may be without them.
        let calls = completion.tool_calls.len();
        let most = if cut { calls } else { calls - 1 };
        for k in (1..=most).rev() {
            let leaked = "\n".repeat(k);
            for candidate in turns {
                if let Some(content) = candidate.turn.content.strip_suffix(leaked.as_str()) {
                    let mut turn = candidate.turn.clone();
                    turn.content = content.to_string();
                    texts.insert(0, profile.completion_text(&request.render_input(), &turn)?);
                }
            }
        }
    }
    // hermes re-serializes non-streamed arguments, and so does a provider that compacts them:
    // every spelling of each value is a candidate.
    let mut spellings_settled = true;
    let rewritten = traits.is_some_and(|p| p.rewrites_calls) && !stream;
    if synthesized && (rewritten || x.options.arguments_reserialized) {
        spellings_settled = with_argument_spellings(&mut texts, turns);
    }
    let family = profile.family.rules();
    let more: Vec<String> = texts
        .iter()
        .flat_map(|t| family.call_spellings(t))
        .collect();
    for text in more {
        if !texts.contains(&text) {
            texts.push(text);
        }
    }
    let grammar = profile.family.spec().tool_grammar;
    let ids_in_stream = profile
        .family
        .syntax()
        .is_some_and(server::Syntax::ids_in_stream);
    if let (true, true, true, Some(grammar)) = (synthesized, cut, ids_in_stream, grammar) {
        // A cut inside the last call's id, where the shape makes a call of it.
        let spaces = x.options.spaces_around_special_tokens;
        if let Some(header) = shape.quirks.cut_call_id_text(completion, spaces) {
            let call_begin = grammar.call_begin();
            let cut_in_id: Vec<String> = texts
                .iter()
                .filter_map(|t| {
                    let at = t.rfind(call_begin)?;
                    Some(format!("{}{header}", &t[..at + call_begin.len()]))
                })
                .collect();
            texts.splice(0..0, cut_in_id);
        }
    }
    if let (true, true, true, Some(grammar)) = (synthesized, cut, x.tools_declared, grammar) {
        texts = classify::with_cut_tails(texts, &grammar);
    }
    if read.closed_section && x.rules.cut_hidden_by_tool_calls {
        // Closed, then maybe cut before the end-of-turn token: the count decides.
        let eot = profile.end_of_turn();
        let unended: Vec<String> = texts
            .iter()
            .filter_map(|t| t.strip_suffix(eot).filter(|_| !eot.is_empty()))
            .map(str::to_string)
            .collect();
        texts.extend(unended);
    }
    Ok((texts, spellings_settled))
}

/// The ids and class of a known shape's answer: every candidate sent forward through it.
fn synthesize(
    x: &Exchange,
    read: &ReadBacks,
    texts: &[String],
    cut: bool,
    warnings: &mut Vec<String>,
) -> (Vec<u32>, Fidelity) {
    let (profile, request, completion, shape) = (x.profile, x.request, x.completion, x.shape);
    let syntax = profile.family.syntax();
    let literals = literal::Literals::shown(profile, completion);
    let cx = synth::Context {
        profile,
        shape,
        rules: x.rules,
        completion,
        asked: ForwardInput {
            text: "",
            cut,
            stream: x.stream,
            spaces: x.options.spaces_around_special_tokens,
            thinking: profile.thinking_enabled(request.chat_template_kwargs.as_ref()),
            tools_declared: x.tools_declared,
            history_calls: turn::earlier_tool_calls(request),
            syntax: syntax.unwrap_or_default(),
            prompt_closes_reasoning: closes_reasoning(profile, x.prompt_ids),
            first_token: None,
            tools: None,
        },
        // Streamed calls with no leak to read them from: the first line of each was sent.
        arguments_hidden: match (
            read.leaks && !cut,
            read.closed_section,
            read.leak_streamed_only,
        ) {
            (false, _, _) => None,
            (true, false, _) => Some(None),
            (true, true, 0) => None,
            (true, true, n) => Some(Some(n)),
        },
        literals: literals.as_ref(),
    };
    let found = synth::synthesize(&cx, texts);
    let grammar = profile.family.spec().tool_grammar;
    if let (0, false, false, Some(grammar)) = (
        found.consistent,
        cut,
        completion.tool_calls.is_empty(),
        grammar,
    ) {
        // No closed call fits: the model may have ended its turn inside the last one.
        let unclosed =
            classify::with_unclosed_last_call(texts.to_vec(), &grammar, profile.end_of_turn());
        let again = synth::synthesize(&cx, &unclosed[texts.len()..]);
        if again.consistent > 0 {
            // Only the count picked this reading, and a closed call the rebuild cannot spell
            // exactly (re-serialized arguments, a parser that drops whitespace) meets the same
            // count one marker shorter: never certain.
            let (ids, mut fidelity) =
                classify::classify(profile, texts, completion, again, shape, &x.rules, warnings);
            fidelity.at_most(FidelityClass::Ambiguous);
            fidelity.because(Reason::LastCallLeftUnclosed);
            warnings.push(
                "ambiguous: no closed tool call meets usage.completion_tokens; rebuilt with the last call left unclosed (the model may have ended its turn inside it), which only the count suggests"
                    .to_string(),
            );
            return (ids, fidelity);
        }
    }
    classify::classify(profile, texts, completion, found, shape, &x.rules, warnings)
}

/// The ids and class where the shape is unknown: the count alone decides.
fn choose_by_usage(
    x: &Exchange,
    texts: &[String],
    warnings: &mut Vec<String>,
) -> (Vec<u32>, Fidelity) {
    let (profile, completion) = (x.profile, x.completion);
    let literals = literal::Literals::shown(profile, completion);
    let chosen = choose::by_usage(profile, texts, completion, literals.as_ref(), warnings);
    let mut fidelity = Fidelity::new(if chosen.ambiguous {
        FidelityClass::Ambiguous
    } else {
        FidelityClass::Unique
    });
    if chosen.ambiguous {
        fidelity.candidates = Some(texts.len());
        fidelity.because(if has_count(completion) {
            Reason::UsageDisagrees
        } else {
            Reason::NoUsage
        });
    } else if has_count(completion) && !counts_agree(completion, &chosen.ids) {
        fidelity.at_most(FidelityClass::Inconsistent);
        fidelity.because(Reason::UsageDisagrees);
    }
    (chosen.ids, fidelity)
}

/// What the shape and the answer leave open beside the rebuild: the flags every non-exact
/// sample carries.
fn flag(
    x: &Exchange,
    read: &ReadBacks,
    cut: bool,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let (profile, request, completion, shape) = (x.profile, x.request, x.completion, x.shape);
    if fidelity.class == FidelityClass::Ambiguous {
        // Several answers a quirk could have hidden were read back and nothing decided.
        for reason in read.open_quirks.iter().filter_map(|q| Reason::of(*q)) {
            fidelity.because(reason);
        }
    }
    classify::server_losses(profile, shape, &x.rules, completion, fidelity, warnings);
    // A streamed 0.11 answer whose section closed shows it (the leak), and the count tells a
    // finished answer from one cut right after the section. One cut inside the section hides
    // what the streamed calls do not show (whitespace around the arguments, a partial
    // character the detokenizer held back): flagged as unstreamed.
    // A stream modelled step by step whose count and limit are known: the synthesis probed what
    // a cut inside the section can hide (`synth::hidden_section_whitespace`, the cut tail).
    let counted_cut =
        read.stepwise && usage_count(completion).is_some() && request.max_tokens.is_some();
    let probed = read.closed_section || counted_cut;
    classify::cut_hidden_by_tool_calls(
        shape,
        x.rules.cut_hidden_by_tool_calls && !probed,
        completion,
        request.max_tokens,
        fidelity,
        warnings,
    );
    classify::foreign_markers(profile, completion, fidelity, warnings);
    let after_calls = parser(profile).is_some_and(|p| p.streams_text_after_calls);
    classify::text_after_calls(after_calls && x.stream, completion, fidelity, warnings);
    classify::partial_character(cut, completion, fidelity, warnings);
}

/// The traits of the servers' parsers for the profile's family, if servers know its syntax.
fn parser(profile: &Profile) -> Option<&'static ParserTraits> {
    profile.family.syntax().map(server::parser_traits)
}

/// The prompt's ids hold the family's reasoning close (as one special token).
fn closes_reasoning(profile: &Profile, prompt_ids: &[u32]) -> bool {
    let Some(close) = profile.reasoning_close() else {
        return false;
    };
    match profile.tokenizer.encode(close)[..] {
        [id] => prompt_ids.contains(&id),
        _ => false,
    }
}

/// Most candidate texts the argument spellings may add for one answer.
const MOST_SPELLINGS: usize = 4096;

/// Add, for each candidate with tool calls, the texts with every spelling of each call's
/// arguments (spliced where the template wrote them). False when some value had too many
/// spellings to try: the count then cannot settle the spelling. Where the calls' spellings
/// together are too many, one style for every call ([`spellings::uniform_spellings`]) is still
/// tried, so the rebuild is the likely stream; it is never settled.
fn with_argument_spellings(texts: &mut Vec<String>, turns: &[turn::Candidate]) -> bool {
    let mut settled = true;
    let mut added = Vec::new();
    'candidates: for (text, candidate) in texts.iter().zip(turns) {
        let mut spans = Vec::new();
        let mut from = 0;
        let mut per_call = Vec::new();
        let mut uniform = Vec::new();
        for call in &candidate.turn.tool_calls {
            // As the template wrote them: a string verbatim, an object with `tojson`.
            let (raw, value) = match &call.arguments {
                crate::completion::Arguments::Raw(raw) => {
                    (raw.clone(), serde_json::from_str(raw).ok())
                }
                crate::completion::Arguments::Object(value) => (
                    crate::pyjson::dumps_json(value, &crate::pyjson::DumpOptions::default()),
                    Some(value.clone()),
                ),
            };
            let Some(at) = text[from..].find(raw.as_str()).map(|at| from + at) else {
                // This candidate's text does not write the calls (reasoning left open).
                continue 'candidates;
            };
            let value: Option<Value> = value;
            if value.as_ref().is_some_and(spellings::has_float) {
                settled = false;
            }
            match value.as_ref().and_then(spellings::spellings) {
                Some(options) => per_call.push(options),
                None => {
                    settled = false;
                    per_call.push(vec![raw.clone()]);
                }
            }
            uniform.push(
                value
                    .as_ref()
                    .map_or_else(|| vec![raw.clone()], spellings::uniform_spellings),
            );
            spans.push((at, at + raw.len()));
            from = at + raw.len();
        }
        let total = per_call
            .iter()
            .try_fold(1usize, |acc, o| acc.checked_mul(o.len()))
            .filter(|&n| n <= MOST_SPELLINGS);
        let combos = match total {
            Some(total) => every_combination(&per_call, total),
            None => {
                settled = false;
                one_style_each(&uniform)
            }
        };
        for choice in combos {
            let out = spliced(text, &spans, &choice);
            if out != *text {
                added.push(out);
            }
        }
    }
    texts.extend(added);
    settled
}

/// All `total` choices of one spelling per call (mixed radix over the calls' options).
fn every_combination(per_call: &[Vec<String>], total: usize) -> Vec<Vec<&str>> {
    (0..total)
        .map(|k| {
            let mut rest = k;
            per_call
                .iter()
                .map(|options| {
                    let pick = options[rest % options.len()].as_str();
                    rest /= options.len();
                    pick
                })
                .collect()
        })
        .collect()
}

/// Style `s` for every call (a call with fewer styles keeps its last).
fn one_style_each(uniform: &[Vec<String>]) -> Vec<Vec<&str>> {
    let styles = uniform.iter().map(Vec::len).max().unwrap_or(0);
    (0..styles)
        .map(|s| {
            uniform
                .iter()
                .filter_map(|options| options.get(s).or(options.last()).map(String::as_str))
                .collect()
        })
        .collect()
}

/// `text` with each span replaced by the chosen spelling.
fn spliced(text: &str, spans: &[(usize, usize)], choice: &[&str]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for ((start, end), pick) in spans.iter().zip(choice) {
        out.push_str(&text[last..*start]);
        out.push_str(pick);
        last = *end;
    }
    out.push_str(&text[last..]);
    out
}

fn usage_count(completion: &Completion) -> Option<u64> {
    completion.usage.as_ref().and_then(|u| u.completion_tokens)
}

fn has_count(completion: &Completion) -> bool {
    completion
        .usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .is_some()
}

fn counts_agree(completion: &Completion, ids: &[u32]) -> bool {
    completion
        .usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .is_none_or(|n| n as usize == ids.len())
}

/// Reconstruct many exchanges on all cores; results keep the input order.
pub fn reconstruct_batch(
    profile: &Profile,
    items: &[(ExchangeRequest, Value, ReconstructOptions)],
) -> Vec<Result<Reconstruction, ReconstructError>> {
    items
        .par_iter()
        .map(|(request, response, options)| reconstruct(profile, request, response, options))
        .collect()
}

/// The rendered prompt, cross-checked with the server's count and ids when it sent them, and
/// the server's count when it disagrees and no server ids replace the render.
/// A prompt rendered from several text parts the servers join differently is not certain
/// (unless the server sent its prompt ids).
fn flag_content_parts(
    x: &Exchange,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let joined = x.profile.joins_content_parts()
        && x.request
            .messages
            .iter()
            .any(crate::model::client_messages::parts_join_differs);
    if joined && completion.prompt_token_ids.is_none() {
        fidelity.at_most(FidelityClass::Ambiguous);
        fidelity.because(Reason::ContentPartsJoinDiffers);
        warnings.push(
            "ambiguous: a message's content has several text parts, which vLLM joins with a newline and SGLang with a space; rendered as vLLM does"
                .to_string(),
        );
    }
}

/// The family knows serving stacks that render this prompt otherwise, by the same count.
fn flag_prompt_doubt(
    x: &Exchange,
    completion: &Completion,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let rules = x.profile.family.rules();
    let stack = prompt_stack(x.shape);
    let doubt = rules.prompt_doubt(&x.request.messages, x.request.tools.as_deref(), stack);
    if let (Some(why), None) = (doubt, &completion.prompt_token_ids) {
        fidelity.at_most(FidelityClass::Ambiguous);
        fidelity.because(Reason::PromptRenderDiffers);
        warnings.push(format!("ambiguous: {why}"));
    }
}

/// The stack that rendered the prompt, as the shape (declared, or a provider's inferred) says;
/// a router passes requests to stacks it does not name.
fn prompt_stack(shape: &ServerShape) -> PromptStack {
    match shape.kind {
        ServerKind::Vllm => PromptStack::Vllm,
        ServerKind::Sglang => PromptStack::Sglang,
        ServerKind::LlamaCpp => PromptStack::LlamaCpp,
        ServerKind::OpenRouter | ServerKind::Generic => PromptStack::Unknown,
    }
}

fn prompt_ids(
    profile: &Profile,
    request: &ExchangeRequest,
    completion: &Completion,
    warnings: &mut Vec<String>,
) -> Result<(Vec<u32>, Option<u64>), ModelError> {
    // A template that writes the day (`strftime_now`) wrote the server's, when the answer says.
    let mut kwargs = request.chat_template_kwargs.clone().unwrap_or_default();
    if let Some(created) = completion.created {
        kwargs.insert(RENDER_TIME.into(), created.into());
    }
    let rendered = profile.render_ids(&RenderInput {
        chat_template_kwargs: Some(&kwargs).filter(|k| !k.is_empty()),
        ..request.render_input()
    })?;
    let mut disagreeing = None;
    if let Some(server) = completion.usage.as_ref().and_then(|u| u.prompt_tokens) {
        if server != rendered.len() as u64 {
            warnings.push(format!(
                "prompt_tokens: the server counted {server}, the rendered prompt has {}",
                rendered.len()
            ));
            disagreeing = Some(server);
        }
    }
    match &completion.prompt_token_ids {
        Some(server_ids) if *server_ids != rendered => {
            warnings.push(format!(
                "server prompt ids differ from the rendered prompt (first difference at position {}); using the server's ids",
                first_difference(server_ids, &rendered)
            ));
            Ok((server_ids.clone(), None))
        }
        // The server's own prompt ids are the render: its count was about something else.
        Some(_) => Ok((rendered, None)),
        None => Ok((rendered, disagreeing)),
    }
}

fn first_difference(a: &[u32], b: &[u32]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}
