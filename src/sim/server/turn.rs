//! [`make_turn`]: one request's [`Turn`] — the model's answer written (or given), sampled with
//! the tokenizer, counted as the server counts it, and given the ids the server mints.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::Shared;
use crate::api::ServerKind;
use crate::model::Profile;
use crate::server::quirks::StreamsTokenDeltas;
use crate::server::ServerShape;
use crate::sim::answer::{self, ModelAnswer, Prompted, END_OF_TURN};
use crate::sim::config::SimConfig;
use crate::sim::conventions::{generates_think, usage_excludes_end_token, Conventions};
use crate::sim::faults::ToolDefect;
use crate::sim::flavor::Turn;
use crate::sim::providers::NamedProvider;
use crate::sim::request::ChatRequest;
use crate::sim::seed::{self, Purpose};
use crate::sim::syntax;
use crate::sim::tokens::{Sampled, TokenCounter};

/// What the simulated model writes for one request.
#[derive(Clone, Copy)]
pub(super) enum Written<'a> {
    /// Its own answer, a pure function of (seed, request).
    Own,
    /// Nothing (the `empty` fault).
    Empty,
    /// These ids, its end-of-turn token included unless `max_tokens` cut them
    /// ([`super::Simulator::answer_with`]).
    Given(&'a [u32]),
}

/// Write (or take), sample and count the answer to `request`, as `provider` (else the
/// simulator's own shape) answers it.
pub(super) fn make_turn(
    shared: &Shared,
    request: &ChatRequest,
    key: u64,
    attempt: u32,
    written: Written,
    provider: Option<&NamedProvider>,
) -> Turn {
    let config = &shared.config;
    let tokens = &shared.tokens;
    let shape = provider.map_or_else(|| config.server_shape(), |p| p.shape);
    let defects = provider.map_or_else(Vec::new, |p| p.defects.decide(config.seed, key));
    let conventions = provider.map_or_else(Conventions::default, |p| p.conventions);
    let family = loaded_family(tokens);
    let thinking = thinking(family, request);
    let opener = generated_opener(tokens, family, &conventions, thinking);
    let (request, written) = before_opener(request, written, opener);
    let request = request.as_ref();
    let own = matches!(written, Written::Own).then(|| {
        let never_calls = defects.contains(&ToolDefect::NeverCalls);
        write_answer(config, request, key, thinking, never_calls)
    });
    let sampled = sample(tokens, request, family, written, own.as_ref());
    let mut counts = count(
        tokens,
        request,
        family,
        thinking,
        written,
        &sampled,
        own.as_ref(),
    );
    counted_by_provider(&conventions, opener, sampled.cut, &mut counts);
    let (id, minted_call_ids) = ids(config, shape, key, attempt, own.as_ref(), &sampled.text);
    let cost = (counts.prompt_tokens as f64 * config.prices.prompt
        + counts.completion_tokens as f64 * config.prices.completion)
        * provider.map_or(1.0, |p| p.price);
    Turn {
        id,
        created: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| config.model_name.clone()),
        complete_text: sampled.complete_text,
        partial_tokens: sampled.partial_tokens,
        text: sampled.text,
        token_ids: counts.token_ids,
        prompt_token_ids: counts.prompt_token_ids,
        prompt_tokens: counts.prompt_tokens,
        completion_tokens: counts.completion_tokens,
        reasoning_tokens: counts.reasoning_tokens,
        cut: sampled.cut,
        thinking,
        tools_declared: !request.tools.is_empty(),
        tools: request.tools.clone(),
        cost,
        minted_call_ids,
        provider: provider.map_or_else(|| config.provider_name.clone(), |p| p.name.clone()),
        shape,
        defects,
        provider_in_body: provider.is_some(),
        spaces_around_special_tokens: spaces(config, tokens, request, &conventions),
        conventions,
        stream_chunk_chars: config.stream_chunk_chars,
        exclude_reasoning: request.exclude_reasoning,
        return_token_ids: request.return_token_ids,
        llama_verbose_tokens: request.llama_verbose_tokens,
        // OpenRouter sends usage whether asked or not.
        include_usage: request.include_usage || shape.kind == ServerKind::OpenRouter,
        history_calls: answer::prior_tool_calls(&request.messages),
        prompt_closes_reasoning: counts.prompt_closes_reasoning,
        first_token: counts.first_token,
        last_token: counts.last_token,
        stop_token: counts.stop_token,
        token_deltas: token_deltas(shape, tokens),
        syntax: family.and_then(|p| p.family.syntax()).unwrap_or_default(),
    }
}

/// The reasoning opener the provider's model generates (`generates_think`, thinking on):
/// `Some(None)` without a tokenizer to name its id.
fn generated_opener(
    tokens: &TokenCounter,
    family: Option<&Profile>,
    conventions: &Conventions,
    thinking: bool,
) -> Option<Option<u32>> {
    if !(conventions.generates_think && thinking) {
        return None;
    }
    let close = family.map_or(Some(answer::THINK_END), |p| p.reasoning_close())?;
    let opener = close.replacen("</", "<", 1);
    Some(match tokens.encode(&opener).as_deref() {
        Some([id]) => Some(*id),
        _ => None,
    })
}

/// What the model writes after a generated opener: the request with the opener taken from its
/// budget, and given ids without it (the opener is added back to the counts and ids by
/// [`counted_by_provider`]).
fn before_opener<'a>(
    request: &'a ChatRequest,
    written: Written<'a>,
    opener: Option<Option<u32>>,
) -> (Cow<'a, ChatRequest>, Written<'a>) {
    let Some(opener) = opener else {
        return (Cow::Borrowed(request), written);
    };
    let budgeted = ChatRequest {
        max_tokens: generates_think::budget_after_opener(request.max_tokens),
        ..request.clone()
    };
    let written = match (written, opener) {
        (Written::Given([first, rest @ ..]), Some(opener)) if *first == opener => {
            Written::Given(rest)
        }
        (written, _) => written,
    };
    (Cow::Owned(budgeted), written)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Stream one token's text per delta where the shape does (vLLM, SGLang) and a tokenizer is
/// loaded.
fn token_deltas(shape: &ServerShape, tokens: &TokenCounter) -> Option<TokenCounter> {
    shape
        .quirks
        .has::<StreamsTokenDeltas>()
        .then(|| tokens.clone())
        .filter(|t| t.has_tokenizer())
}

/// The counts (and ids) as the provider's conventions report them.
fn counted_by_provider(
    conventions: &Conventions,
    opener: Option<Option<u32>>,
    cut: bool,
    counts: &mut Counts,
) {
    if conventions.usage_excludes_end_token {
        counts.completion_tokens =
            usage_excludes_end_token::completion_tokens(counts.completion_tokens, cut);
    }
    if let Some(opener) = opener {
        counts.prompt_tokens = counts.prompt_tokens.saturating_sub(1);
        counts.completion_tokens += 1;
        if let (Some(id), Some(prompt), Some(completion)) = (
            opener,
            counts.prompt_token_ids.as_mut(),
            counts.token_ids.as_mut(),
        ) {
            generates_think::move_opener(id, prompt, completion);
        }
    }
}

/// The loaded family: its answers are written as its profile writes a turn (without one, in
/// Kimi K2.5's syntax, the simulator's own).
fn loaded_family(tokens: &TokenCounter) -> Option<&Profile> {
    tokens.profile()
}

/// Whether the model thinks: by the request's `thinking` (Kimi's switch), or by another
/// family's own switch (Qwen3 `enable_thinking`; DeepSeek-V3 never).
fn thinking(family: Option<&Profile>, request: &ChatRequest) -> bool {
    match family {
        Some(p) => {
            p.thinking_enabled(request.chat_template_kwargs.as_ref())
                && p.reasoning_close().is_some()
        }
        None => request.thinking,
    }
}

/// The model's own answer, in Kimi's syntax: a pure function of (seed, request).
fn write_answer(
    config: &SimConfig,
    request: &ChatRequest,
    key: u64,
    thinking: bool,
    never_calls: bool,
) -> ModelAnswer {
    // A model that never calls: as if every request said `tool_choice: "none"`.
    let none = Value::from("none");
    let prompted = Prompted {
        messages: &request.messages,
        tools: &request.tools,
        tool_choice: if never_calls {
            Some(&none)
        } else {
            request.tool_choice.as_ref()
        },
        thinking,
    };
    let mut rng = seed::rng(config.seed, key, Purpose::Answer, 0);
    answer::write(&prompted, &config.behaviour, &mut rng)
}

/// The sampled tokens: the given ids, or the own answer in its family's syntax (Kimi's
/// natively, another family's as its profile writes a turn) cut at `max_tokens`.
fn sample(
    tokens: &TokenCounter,
    request: &ChatRequest,
    family: Option<&Profile>,
    written: Written,
    own: Option<&ModelAnswer>,
) -> Sampled {
    let end_of_turn = family.map_or(END_OF_TURN, |p| p.end_of_turn());
    let given = match written {
        Written::Given(ids) => tokens.given(ids, end_of_turn),
        Written::Own | Written::Empty => None,
    };
    match (given, own, family) {
        (Some(given), _, _) => given,
        (None, Some(answer), Some(profile)) => {
            let native = answer::family_text(answer, profile, request);
            tokens.sample(&native, profile.end_of_turn(), request.max_tokens)
        }
        (None, Some(answer), None) => {
            tokens.sample(&answer.native_text(), END_OF_TURN, request.max_tokens)
        }
        (None, None, _) => tokens.sample("", "", None),
    }
}

/// What the server counts and sees of one answer's tokens.
struct Counts {
    token_ids: Option<Vec<u32>>,
    completion_tokens: usize,
    reasoning_tokens: usize,
    prompt_token_ids: Option<Vec<u32>>,
    prompt_tokens: usize,
    prompt_closes_reasoning: bool,
    first_token: Option<String>,
    last_token: Option<String>,
    stop_token: Option<u32>,
}

fn count(
    tokens: &TokenCounter,
    request: &ChatRequest,
    family: Option<&Profile>,
    thinking: bool,
    written: Written,
    sampled: &Sampled,
    own: Option<&ModelAnswer>,
) -> Counts {
    let (completion_tokens, token_ids) = if matches!(written, Written::Empty) {
        (0, tokens.has_tokenizer().then(Vec::new))
    } else {
        (sampled.count, sampled.ids.clone())
    };
    let close = family.map_or(Some(answer::THINK_END), |p| p.reasoning_close());
    let prompt = tokens.prompt(
        &request.messages,
        &request.tools,
        request.chat_template_kwargs.as_ref(),
        request.thinking,
    );
    let prompt_closes_reasoning = match (&prompt.ids, close) {
        (Some(ids), Some(close)) => tokens.before(ids, close).is_some_and(|n| n < ids.len()),
        _ => false,
    };
    let counted = reasoning_tokens(tokens, family, close, thinking, sampled);
    let reasoning_tokens = counted.unwrap_or_else(|| {
        own.and_then(|a| a.reasoning.as_deref())
            .map(|r| tokens.count(r).min(completion_tokens))
            .unwrap_or(0)
    });
    Counts {
        token_ids,
        completion_tokens,
        reasoning_tokens,
        prompt_token_ids: prompt.ids,
        prompt_tokens: prompt.count,
        prompt_closes_reasoning,
        first_token: match &sampled.ids {
            Some(ids) => tokens.first_token_text(ids),
            // Without a tokenizer a token is a whitespace-separated piece.
            None => Some(first_piece(&sampled.text)),
        },
        last_token: sampled
            .ids
            .as_deref()
            .and_then(|ids| ids.last())
            .and_then(|&id| tokens.decode(&[id])),
        // The end-of-turn id that stopped the answer (vLLM's `stop_reason`).
        stop_token: match (&sampled.ids, sampled.cut) {
            (Some(ids), false) => ids.last().copied().filter(|&id| !tokens.is_eos(id)),
            _ => None,
        },
    }
}

/// What the reasoning parser counts: up to the reasoning's end (Kimi's also ends at the tool
/// section), from the model's own opener if it writes one (Qwen3's `<think>`). `None`: no
/// tokenizer to count with.
fn reasoning_tokens(
    tokens: &TokenCounter,
    family: Option<&Profile>,
    close: Option<&str>,
    thinking: bool,
    sampled: &Sampled,
) -> Option<usize> {
    let reasoning_ends: Vec<&str> = match (family, close) {
        (_, None) => Vec::new(),
        (None, Some(close)) => vec![close, answer::SECTION_BEGIN, answer::CALL_BEGIN],
        (Some(p), Some(close)) if syntax::reasoning_ends_at_tool_section(p.family.syntax()) => {
            vec![close, answer::SECTION_BEGIN, answer::CALL_BEGIN]
        }
        (Some(_), Some(close)) => vec![close],
    };
    match (&sampled.ids, close) {
        (Some(ids), Some(_)) if thinking => {
            tokens.reasoning_tokens(ids, "<think>", &reasoning_ends)
        }
        (Some(_), _) => Some(0),
        (None, _) => None,
    }
}

/// The response id (`gen-…` on OpenRouter, `chatcmpl-…` elsewhere) and the call ids a server
/// mints (`call_<24 hex>`), one per call the answer makes. Call ids depend on the request only,
/// so a retry reports the same ids.
fn ids(
    config: &SimConfig,
    shape: &ServerShape,
    key: u64,
    attempt: u32,
    own: Option<&ModelAnswer>,
    text: &str,
) -> (String, Vec<String>) {
    let mut ids_rng = seed::rng(config.seed, key, Purpose::Ids, attempt);
    let id = match shape.kind {
        ServerKind::OpenRouter => format!(
            "gen-{}-{}",
            1_700_000_000 + u64::from(attempt),
            seed::hex(&mut ids_rng, 20)
        ),
        ServerKind::Vllm | ServerKind::Sglang | ServerKind::LlamaCpp | ServerKind::Generic => {
            format!("chatcmpl-{}", seed::hex(&mut ids_rng, 32))
        }
    };
    let mut call_rng = seed::rng(config.seed, key, Purpose::Ids, u32::MAX);
    let calls = own.map_or_else(|| syntax::calls_opened(text), |a| a.tool_calls.len());
    let minted = (0..calls)
        .map(|_| format!("call_{}", seed::hex(&mut call_rng, 24)))
        .collect();
    (id, minted)
}

/// Only a slow detokenizer (Kimi's tiktoken one) puts spaces around added tokens; a request's
/// `spaces_between_special_tokens` wins over the simulator's setting, and a provider whose stack
/// spaces them (`spaces_special_tokens`) always does.
fn spaces(
    config: &SimConfig,
    tokens: &TokenCounter,
    request: &ChatRequest,
    conventions: &Conventions,
) -> bool {
    (conventions.spaces_special_tokens
        || request
            .spaces_between_special_tokens
            .unwrap_or(config.spaces_around_special_tokens))
        && tokens
            .profile()
            .is_none_or(|p| p.family.spec().detokenizer_spaces)
}

/// The text up to the end of its first whitespace-separated piece.
fn first_piece(text: &str) -> String {
    let start = text.len() - text.trim_start().len();
    let end = text[start..]
        .find(char::is_whitespace)
        .map_or(text.len(), |at| start + at);
    text[..end].to_string()
}
