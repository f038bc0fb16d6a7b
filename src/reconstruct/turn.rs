//! Reading a server's answer back into what the model wrote.
//!
//! The shapes handled (tests/data/server_shapes/): reasoning in `reasoning`/`reasoning_content`/
//! `reasoning_details`, or left in `content` with its `</think>`; tool calls as a structured
//! array (any id scheme; arguments as a string or an object) or left raw in `content`; spaces
//! around markers; `finish_reason: "length"` (no end-of-turn token).

use crate::completion::{Arguments, Completion, ToolCall};
use crate::model::profile::AssistantTurn;
use crate::model::{Profile, Tokenizer};

use super::despace::despace;
use super::{ExchangeRequest, ReconstructOptions};

/// One way the response could have been produced.
pub(super) struct Candidate {
    pub turn: AssistantTurn,
    /// The exact stream text when the response already holds it (no parser touched it).
    pub verbatim: Option<String>,
}

/// Every token stream the response may have come from; the first is the most likely one.
pub(super) fn candidates(
    profile: &Profile,
    request: &ExchangeRequest,
    completion: &Completion,
    options: &ReconstructOptions,
    warnings: &mut Vec<String>,
) -> Vec<Candidate> {
    let tokenizer = &profile.tokenizer;
    let end_of_turn = completion.finish_reason.as_deref() != Some("length");
    let close = profile.reasoning_close().map(str::to_string);
    let thinking = profile.thinking_enabled(request.chat_template_kwargs.as_ref());

    let (mut reasoning, mut content) = despaced(profile, completion, options);
    // No parser touched the text: `content` is the stream itself.
    if reasoning.is_none() && completion.tool_calls.is_empty() {
        let unparsed = unparsed(profile, &content, thinking, end_of_turn, warnings);
        if let Some(candidate) = unparsed {
            let native = native_unparsed(profile, thinking, &candidate);
            return std::iter::once(candidate).chain(native).collect();
        }
    }
    // Reasoning left in content before `</think>` while tool calls were parsed out.
    if reasoning.is_none() {
        if let Some(close) = close.as_deref() {
            if let Some(at) = content.find(close) {
                let open = close.replacen("</", "<", 1);
                let before = &content[..at];
                let before = before.strip_prefix(open.as_str()).unwrap_or(before);
                reasoning = Some(before.to_string());
                content = content[at + close.len()..].to_string();
            }
        }
    }
    if reasoning.is_none() && thinking && close.is_some() {
        warnings.push(
            "no reasoning in the response although thinking is on (the provider may hide it); assumed an empty reasoning block"
                .to_string(),
        );
        reasoning = Some(String::new());
    }
    if let Some(r) = &reasoning {
        flag_literals(r, "reasoning", tokenizer, warnings);
    }
    flag_literals(&content, "content", tokenizer, warnings);
    let mut tool_calls = native_tool_calls(profile, request, &completion.tool_calls, warnings);
    if options.spaces_around_special_tokens {
        // Streamed arguments sit between two added tokens: one joining space on each side.
        for call in &mut tool_calls {
            if let Arguments::Raw(args) = &mut call.arguments {
                let inner = args.strip_prefix(' ').unwrap_or(args);
                let inner = inner.strip_suffix(' ').unwrap_or(inner);
                *args = inner.to_string();
            }
        }
    }
    let turn = AssistantTurn {
        reasoning_closed: reasoning.is_some(),
        reasoning,
        content,
        tool_calls,
        end_of_turn,
    };
    with_unclosed(profile, turn)
}

/// The family's own text for an unparsed answer's turn where it differs from the content as
/// received (Llama 3.1 writes a built-in tool call after `<|python_tag|>`, which the detokenizer
/// skipped, and ends it with `<|eom_id|>`): another candidate, the count decides.
fn native_unparsed(profile: &Profile, thinking: bool, candidate: &Candidate) -> Option<Candidate> {
    let verbatim = candidate.verbatim.as_deref()?;
    if thinking {
        return None;
    }
    let native = profile
        .family
        .rules()
        .completion_text(false, &candidate.turn)?
        .ok()?;
    (native != verbatim).then(|| Candidate {
        turn: candidate.turn.clone(),
        verbatim: Some(native),
    })
}

/// The answer's reasoning and content without the spaces the detokenizer put around added
/// tokens.
fn despaced(
    profile: &Profile,
    completion: &Completion,
    options: &ReconstructOptions,
) -> (Option<String>, String) {
    let tokenizer = &profile.tokenizer;
    let mut reasoning = completion.reasoning.clone();
    let mut content = completion.content.clone().unwrap_or_default();
    if options.spaces_around_special_tokens {
        // The generation prompt ends with an added token, so the detokenizer (which decodes
        // with a few prompt tokens as prefix) puts a space before the first piece too; and a
        // parser cut the marker between reasoning and content (or the tool section) out.
        let has_section = !completion.tool_calls.is_empty();
        if let Some(r) = &reasoning {
            reasoning = Some(despace(r, tokenizer.special_spans(r), true, true));
        }
        content = despace(
            &content,
            tokenizer.special_spans(&content),
            true,
            has_section,
        );
    }
    (reasoning, content)
}

/// An answer no parser touched (`content` is the stream itself): the one candidate it gives,
/// or `None` when it is read as parsed (thinking on, and nothing in it ends the reasoning).
fn unparsed(
    profile: &Profile,
    content: &str,
    thinking: bool,
    end_of_turn: bool,
    warnings: &mut Vec<String>,
) -> Option<Candidate> {
    // The end of reasoning is `</think>`, or a tool section opened inside the reasoning.
    let raw_ends_reasoning = [profile.reasoning_close(), profile.tool_section_begin()]
        .into_iter()
        .flatten()
        .any(|marker| content.contains(marker));
    if !thinking || raw_ends_reasoning {
        flag_literals(
            &structural_free(content, profile),
            "content",
            &profile.tokenizer,
            warnings,
        );
        let mut text = content.to_string();
        if end_of_turn {
            text.push_str(profile.end_of_turn());
        }
        let turn = AssistantTurn {
            reasoning: None,
            reasoning_closed: false,
            content: content.to_string(),
            tool_calls: Vec::new(),
            end_of_turn,
        };
        return Some(Candidate {
            turn,
            verbatim: Some(text),
        });
    }
    if !end_of_turn {
        // Cut off mid-reasoning by a server with no reasoning parser.
        let turn = AssistantTurn {
            reasoning: Some(content.to_string()),
            reasoning_closed: false,
            content: String::new(),
            tool_calls: Vec::new(),
            end_of_turn,
        };
        return Some(Candidate {
            turn,
            verbatim: Some(content.to_string()),
        });
    }
    None
}

/// The template's form of `turn`, and the same turn with its reasoning never closed where the
/// answer cannot tell the two apart.
fn with_unclosed(profile: &Profile, turn: AssistantTurn) -> Vec<Candidate> {
    // Kimi opens a tool section straight after its reasoning without `</think>`, and a
    // `length` stop can land right on `</think>`: the parsers give the same fields either way.
    // A reasoning that holds a tool section was never closed where the server's reasoning
    // parser ends only at `</think>` (vLLM 0.11's DeepSeek-R1 parser keeps the section in it).
    let section_in_reasoning = match (&turn.reasoning, profile.tool_section_begin()) {
        (Some(r), Some(section)) => r.contains(section),
        _ => false,
    };
    let open_question = turn.reasoning.is_some()
        && profile.reasoning_close().is_some()
        && turn.content.is_empty()
        && (!turn.tool_calls.is_empty() || !turn.end_of_turn || section_in_reasoning);
    let end_of_turn = turn.end_of_turn;
    let unclosed = open_question.then(|| Candidate {
        turn: AssistantTurn {
            reasoning_closed: false,
            ..turn.clone()
        },
        verbatim: None,
    });
    let mut all = vec![Candidate {
        turn,
        verbatim: None,
    }];
    if let Some(unclosed) = unclosed {
        // A `length` stop with nothing after the reasoning was most likely still reasoning;
        // a tool section is written after `</think>` by the template.
        if end_of_turn {
            all.push(unclosed);
        } else {
            all.insert(0, unclosed);
        }
    }
    all
}

/// Give each call the id the model wrote: a native id as returned (vLLM passes the raw text
/// through), otherwise the family's id numbered over the whole conversation.
fn native_tool_calls(
    profile: &Profile,
    request: &ExchangeRequest,
    calls: &[ToolCall],
    warnings: &mut Vec<String>,
) -> Vec<ToolCall> {
    let earlier = earlier_tool_calls(request);
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            if let Arguments::Raw(args) = &call.arguments {
                flag_literals(args, "tool-call arguments", &profile.tokenizer, warnings);
            }
            let keep = call
                .id
                .as_deref()
                .is_some_and(|id| profile.is_native_tool_call_id(id));
            let id = if keep {
                call.id.clone()
            } else {
                profile
                    .native_tool_call_id(&call.name, earlier + i)
                    .or_else(|| call.id.clone())
            };
            ToolCall {
                id,
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }
        })
        .collect()
}

/// Tool calls already made in the conversation (the native index continues from there).
pub(super) fn earlier_tool_calls(request: &ExchangeRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.get("role").and_then(|r| r.as_str()) == Some("assistant"))
        .filter_map(|m| m.get("tool_calls").and_then(|c| c.as_array()))
        .map(Vec::len)
        .sum()
}

/// Raw content minus the markers that are structure, not text: the opening `<think>`, the
/// first `</think>` and the tool section.
fn structural_free(content: &str, profile: &Profile) -> String {
    let mut text = content.to_string();
    if let Some(close) = profile.reasoning_close() {
        let open = close.replacen("</", "<", 1);
        if let Some(rest) = text.strip_prefix(open.as_str()) {
            text = rest.to_string();
        }
        text = text.replacen(close, "", 1);
    }
    if let Some(section) = profile.tool_section_begin() {
        if let Some(at) = text.find(section) {
            text.truncate(at);
        }
    }
    text
}

/// Text that spells a special token is encoded as that token by the serving tokenizer; the
/// model may have written it as plain pieces. Say so on the sample.
fn flag_literals(text: &str, field: &str, tokenizer: &Tokenizer, warnings: &mut Vec<String>) {
    for marker in tokenizer.special_tokens_in(text) {
        warnings.push(format!(
            "special-token literal {marker} in {field}: tried as the special token and as plain text, the count decides"
        ));
    }
}
