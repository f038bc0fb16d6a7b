//! What one answer shows about the server that sent it: read from the response JSON exactly as
//! it came (field names, `null` versus `""`, id formats, markers left in the text), because the
//! normalized [`Completion`] deliberately forgets those differences.
//!
//! Each observation that tells server shapes apart also becomes a [`Clue`]: a statement about
//! the answer that a [`ServerShape`] either fits or contradicts (`super::recognize` counts them).

use serde::Serialize;
use serde_json::Value;

use crate::completion::{Completion, ToolCall};
use crate::model::family::{Family, FamilySpec};
use crate::model::{AssistantTurn, Profile, RenderInput};
use crate::pyjson::{dumps_json, DumpOptions};
use crate::server::{
    forward, CallIdForm, Evidence, ForwardInput, Quirk, ReasoningField, Seen, ServerShape, SHAPES,
};

/// What the probe knows of the model behind the answers (`probe --tokenizer`): its family's
/// markers, ids and template, and the request sent, so that the answer can be held against what
/// the family's own text would have become on each server shape. Without it the markers of every
/// known family are looked for and nothing is checked forward.
#[derive(Clone)]
pub struct Expectation<'a> {
    pub profile: &'a Profile,
    /// The request as sent (messages, tools, `chat_template_kwargs`).
    pub input: RenderInput<'a>,
}

/// A family's structural markers: they only reach `content` when the server did not parse the
/// model's text (the reasoning close, the tool-call openers, the end-of-turn token, and the
/// markers only the family writes, such as harmony's `<|channel|>` or Llama's `<|python_tag|>`).
fn spec_markers(spec: &'static FamilySpec) -> Vec<&'static str> {
    let openers = spec.tool_grammar.map_or(&[][..], |g| g.openers);
    [
        spec.reasoning_close,
        spec.tool_section_begin,
        spec.end_of_turn,
    ]
    .into_iter()
    .flatten()
    .chain(openers.iter().copied())
    .chain(spec.distinctive_markers.iter().copied())
    .collect()
}

/// The markers that mean "not parsed": the model's family's (and its end-of-turn token when that
/// is the tokenizer's `eos_token`), or every known family's.
fn raw_markers(expect: Option<&Expectation>) -> Vec<String> {
    let mut markers: Vec<String> = match expect {
        Some(e) => spec_markers(e.profile.family.spec())
            .into_iter()
            .chain([e.profile.end_of_turn()])
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect(),
        None => Family::all()
            .iter()
            .flat_map(|f| spec_markers(f.spec()))
            .map(str::to_string)
            .collect(),
    };
    markers.sort_unstable();
    markers.dedup();
    markers
}

/// The markers whose spacing tells vLLM's `spaces_between_special_tokens`: every added token of
/// the model's tokenizer, or the known families' structural markers.
fn spaced_markers(expect: Option<&Expectation>) -> Vec<String> {
    match expect {
        Some(e) => e.profile.tokenizer.special_tokens().to_vec(),
        None => raw_markers(None),
    }
}

/// The observable facts of one answer (the JSON of `probe --json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Observation {
    /// `reasoning`, `reasoning_content`, `content` (left in the text before `</think>`), or
    /// `null` when the answer has no reasoning.
    pub reasoning_field: Option<&'static str>,
    pub reasoning_details: bool,
    /// `</think>`: `stripped` (reasoning split off), `left` (still in `content`), `null` (no
    /// reasoning seen).
    pub think_close: Option<&'static str>,
    /// `structured` (`tool_calls`), `raw` (markers in `content`), `none`.
    pub tool_calls: &'static str,
    pub tool_call_count: usize,
    /// Call ids: `native` (`functions.NAME:N`), `openrouter` (`call_` + 24 hex; a label only,
    /// any upstream may send it), `other`.
    pub call_ids: Option<&'static str>,
    /// Argument text: `json.dumps` (`", "`/`": "` separators: re-serialized by Python),
    /// `compact`, `padded` (whitespace around it kept), `object` (not a string).
    pub arguments: Option<&'static str>,
    pub calls_have_index: bool,
    /// A space on each side of the special tokens left in the text (vLLM's
    /// `spaces_between_special_tokens`); `null` when no marker is in the text.
    pub spaces_around_markers: Option<bool>,
    /// How an empty `content` came: `null` or `""` (`None` when content was not empty).
    pub empty_content: Option<&'static str>,
    pub finish_reason: Option<String>,
    pub native_finish_reason: Option<String>,
    /// The server's own ids: `token_ids` (vLLM/SGLang) or `__verbose.tokens` (llama.cpp).
    pub server_ids: Option<&'static str>,
    /// llama.cpp's dressing: a `timings` object, `system_fingerprint` `b<build>-…`.
    pub llamacpp_dress: bool,
    /// OpenRouter's dressing: a top-level `provider`, or `usage.cost`.
    pub openrouter_dress: bool,
    pub provider: Option<String>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cost: Option<f64>,
    /// The shapes whose forward function reproduces the answer's fields from the model text it
    /// implies in the family's syntax (empty when not checked: no `--tokenizer`, or a family
    /// without a known syntax).
    pub forward_agrees: Vec<String>,
}

/// A statement about answers that a server shape fits or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Clue {
    /// The server parsed the text (reasoning split off or structured calls) or did not.
    Parses(bool),
    ReasoningIn(ReasoningFieldName),
    ReasoningDetails(bool),
    /// Call ids `call_<24 hex>`: OpenAI-style; OpenRouter passes such an upstream's on.
    IdsOpenRouter,
    /// Call ids in neither the family's nor the `call_<24 hex>` form (which server minted them
    /// is the `mints_call_ids` quirk's evidence; OpenRouter passes an upstream's through).
    IdsOther,
    LlamaCppDress(bool),
    OpenRouterDress(bool),
    /// What the answer shows (`shows`) of the quirk named `quirk` ([`Quirk::evidence`]): only a
    /// server with it sends that (`with`), or only one without it.
    Quirk {
        quirk: &'static str,
        with: bool,
        shows: &'static str,
    },
}

/// [`ReasoningField`] as an ordered key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReasoningFieldName {
    Reasoning,
    ReasoningContent,
    /// The same text under both names.
    Both,
}

impl Clue {
    /// Whether `shape` could have sent an answer showing this.
    pub fn fits(self, shape: &ServerShape) -> bool {
        use crate::api::ServerKind;
        match self {
            Clue::Parses(p) => shape.parses == p || !shape.known,
            Clue::ReasoningIn(name) => {
                shape.parses
                    && match name {
                        ReasoningFieldName::Reasoning => {
                            shape.reasoning_field == ReasoningField::Reasoning
                        }
                        ReasoningFieldName::ReasoningContent => {
                            shape.reasoning_field == ReasoningField::ReasoningContent
                        }
                        ReasoningFieldName::Both => shape.reasoning_field == ReasoningField::Both,
                    }
            }
            Clue::ReasoningDetails(d) => shape.reasoning_details == d,
            // OpenRouter passes the upstream's ids through (any form), and other upstreams
            // send `call_…` too: the id form says nothing for or against OpenRouter.
            Clue::IdsOpenRouter => true,
            Clue::IdsOther => true,
            Clue::LlamaCppDress(d) => (shape.kind == ServerKind::LlamaCpp) == d,
            Clue::OpenRouterDress(d) => (shape.kind == ServerKind::OpenRouter) == d,
            Clue::Quirk { quirk, with, .. } => {
                let names = shape.quirks.names();
                // Ids passed through from an upstream may be of any form, minted ones included.
                if quirk == "mints_call_ids" && names.contains(&"passes_upstream_call_ids") {
                    return true;
                }
                // An unknown shape assumes nothing of a quirk it does not list.
                let listed = names.contains(&quirk);
                listed == with || (!shape.known && !listed)
            }
        }
    }

    pub fn describe(self) -> String {
        match self {
            Clue::Parses(true) => "the text was parsed (reasoning or tool calls split off)".into(),
            Clue::Parses(false) => "native markers left in content (no parser)".into(),
            Clue::ReasoningIn(ReasoningFieldName::Reasoning) => "reasoning in `reasoning`".into(),
            Clue::ReasoningIn(ReasoningFieldName::ReasoningContent) => {
                "reasoning in `reasoning_content`".into()
            }
            Clue::ReasoningIn(ReasoningFieldName::Both) => {
                "reasoning in `reasoning_content`, mirrored in `reasoning`".into()
            }
            Clue::ReasoningDetails(d) => format!("reasoning_details {}", present(d)),
            Clue::IdsOpenRouter => "call ids call_<24 hex>".into(),
            Clue::IdsOther => "call ids minted by the server".into(),
            Clue::LlamaCppDress(d) => format!("llama.cpp timings/fingerprint {}", present(d)),
            Clue::OpenRouterDress(d) => format!("OpenRouter provider/cost {}", present(d)),
            Clue::Quirk { shows, .. } => shows.into(),
        }
    }
}

fn present(yes: bool) -> &'static str {
    if yes {
        "present"
    } else {
        "absent"
    }
}

fn non_empty_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn is_openrouter_id(id: &str) -> bool {
    id.strip_prefix("call_")
        .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// An id in the native form of a family whose token stream carries ids (Kimi's
/// `functions.NAME:N`), by the families' own rules.
fn is_native_id(id: &str) -> bool {
    Family::all().iter().any(|family| {
        let rules = family.rules();
        // What the family's ids start with before the name (`functions.`): a server's
        // `NAME:N` is not the model's.
        let prefix = rules
            .native_tool_call_id("NAME", 0)
            .and_then(|sample| Some(sample[..sample.find("NAME")?].to_string()));
        family.syntax().is_some_and(|s| s.ids_in_stream())
            && prefix.is_some_and(|p| id.starts_with(&p))
            && rules.is_native_tool_call_id(id)
    })
}

/// How an argument string was written.
fn argument_style(arguments: &Value) -> &'static str {
    let Some(text) = arguments.as_str() else {
        return "object";
    };
    if text.trim() != text {
        return "padded";
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            let dumps = |ensure_ascii| {
                let options = DumpOptions {
                    ensure_ascii,
                    ..DumpOptions::default()
                };
                dumps_json(&value, &options)
            };
            if text.contains(": ") && (dumps(false) == text || dumps(true) == text) {
                "json.dumps"
            } else if serde_json::to_string(&value).ok().as_deref() == Some(text) {
                "compact"
            } else {
                "verbatim"
            }
        }
        Err(_) => "invalid_json",
    }
}

/// Whether every marker in `text` has a space on each side (where it is not at an edge).
fn markers_spaced(text: &str, markers: &[String]) -> Option<bool> {
    let mut seen = false;
    let mut spaced = true;
    for marker in markers.iter().filter(|m| !m.is_empty()) {
        for (at, _) in text.match_indices(marker) {
            seen = true;
            let before = text[..at].chars().next_back();
            let after = text[at + marker.len()..].chars().next();
            if before.is_some_and(|c| c != ' ') || after.is_some_and(|c| c != ' ') {
                spaced = false;
            }
        }
    }
    seen.then_some(spaced)
}

/// A clue for each quirk of the known shapes whose evidence the answer holds.
fn quirk_clues(seen: &Seen) -> Vec<Clue> {
    let mut quirks: Vec<&'static dyn Quirk> = SHAPES.iter().flat_map(|s| s.quirks.all()).collect();
    let mut names = std::collections::HashSet::new();
    quirks.retain(|q| names.insert(q.name()));
    quirks
        .into_iter()
        .filter_map(|quirk| {
            let (with, shows) = match quirk.evidence(seen) {
                Evidence::Shows(shows) => (true, shows),
                Evidence::Contradicts(shows) => (false, shows),
                Evidence::Silent => return None,
            };
            Some(Clue::Quirk {
                quirk: quirk.name(),
                with,
                shows,
            })
        })
        .collect()
}

/// Read one answer (a chat.completion exactly as received). `streamed`: argument padding is
/// then no clue (most shapes keep it when streaming). `expect`: the model's family and the
/// request (`None`: every family's markers are looked for, nothing is checked forward).
pub fn observe(
    body: &Value,
    expect: Option<&Expectation>,
    streamed: bool,
) -> (Observation, Vec<Clue>) {
    let raw_markers = raw_markers(expect);
    let mut o = Observation::default();
    let mut clues = Vec::new();
    let choice = &body["choices"][0];
    let message = &choice["message"];
    let content_value = message.get("content");
    let content = content_value.and_then(Value::as_str).unwrap_or_default();

    let reasoning = reasoning_seen(message, &mut o, &mut clues);
    let raw = raw_markers.iter().any(|m| content.contains(m));
    o.think_close = if content.contains("</think>") {
        o.reasoning_field.get_or_insert("content");
        Some("left")
    } else if reasoning.is_some() {
        Some("stripped")
    } else {
        None
    };

    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    o.tool_call_count = calls.len();
    o.tool_calls = if !calls.is_empty() {
        "structured"
    } else if tool_openers(expect)
        .iter()
        .any(|m| content.contains(m.as_str()))
    {
        "raw"
    } else {
        "none"
    };
    // A call left in the text of a request that declared tools: no parser read it (Llama's
    // JSON calls carry no marker of their own).
    let declared = expect.is_none_or(|e| e.input.tools.is_some_and(|t| !t.is_empty()));
    if raw || (o.tool_calls == "raw" && declared) {
        clues.push(Clue::Parses(false));
    } else if reasoning.is_some() || !calls.is_empty() {
        clues.push(Clue::Parses(true));
    }
    let call_ids = calls
        .first()
        .and_then(|first| calls_seen(first, &calls, expect, &mut o, &mut clues));
    o.spaces_around_markers = markers_spaced(content, &spaced_markers(expect));
    if content.is_empty() {
        let null = content_value.is_none_or(Value::is_null);
        o.empty_content = Some(if null { "null" } else { "\"\"" });
    }
    // What the quirks' evidence shows; what a quirk does to the text per syntax is judged by the
    // forward check where the family is known.
    let answer = Completion::from_response(body).ok();
    clues.extend(quirk_clues(&Seen {
        body,
        answer: answer.as_ref(),
        stream: streamed,
        call_ids,
        forward_checked: expect.is_some(),
    }));
    dressing_seen(body, &mut o, &mut clues);
    if let Some(expect) = expect {
        o.forward_agrees = forward_agreeing(body, expect, &raw_markers, streamed);
    }
    (o, clues)
}

/// Where the reasoning came (its field, `reasoning_details`): the reasoning, if any.
fn reasoning_seen<'a>(
    message: &'a Value,
    o: &mut Observation,
    clues: &mut Vec<Clue>,
) -> Option<&'a str> {
    let mirrored = non_empty_str(message.get("reasoning"))
        .filter(|r| non_empty_str(message.get("reasoning_content")) == Some(*r));
    let reasoning = if let Some(r) = mirrored {
        o.reasoning_field = Some("reasoning_content+reasoning");
        clues.push(Clue::ReasoningIn(ReasoningFieldName::Both));
        Some(r)
    } else if let Some(r) = non_empty_str(message.get("reasoning")) {
        o.reasoning_field = Some("reasoning");
        clues.push(Clue::ReasoningIn(ReasoningFieldName::Reasoning));
        Some(r)
    } else if let Some(r) = non_empty_str(message.get("reasoning_content")) {
        o.reasoning_field = Some("reasoning_content");
        clues.push(Clue::ReasoningIn(ReasoningFieldName::ReasoningContent));
        Some(r)
    } else {
        None
    };
    o.reasoning_details = message
        .get("reasoning_details")
        .and_then(Value::as_array)
        .is_some_and(|d| !d.is_empty());
    if reasoning.is_some() {
        clues.push(Clue::ReasoningDetails(o.reasoning_details));
    }
    reasoning
}

/// What the first tool call shows (its id and argument style) and whether the calls carry
/// `index`: the id's form where it tells a quirk apart.
fn calls_seen(
    first: &Value,
    calls: &[Value],
    expect: Option<&Expectation>,
    o: &mut Observation,
    clues: &mut Vec<Clue>,
) -> Option<CallIdForm> {
    let id = first["id"].as_str().unwrap_or_default();
    // A family whose token stream carries no ids (Qwen3, DeepSeek-V3) gets ids from every
    // server: then only the `call_<24 hex>` form is told apart.
    let ids_in_stream = expect.is_none_or(|e| {
        e.profile
            .family
            .syntax()
            .is_some_and(|syntax| syntax.ids_in_stream())
    });
    let native = match expect {
        Some(e) => e.profile.is_native_tool_call_id(id) && ids_in_stream,
        None => is_native_id(id),
    };
    let (style, clue, form) = if is_openrouter_id(id) {
        ("openrouter", Some(Clue::IdsOpenRouter), None)
    } else if native {
        ("native", None, Some(CallIdForm::Native))
    } else if ids_in_stream {
        ("other", Some(Clue::IdsOther), Some(CallIdForm::Minted))
    } else {
        ("minted", None, None)
    };
    o.call_ids = Some(style);
    clues.extend(clue);
    let arguments = &first["function"]["arguments"];
    let style = argument_style(arguments);
    o.arguments = Some(style);
    o.calls_have_index = calls
        .iter()
        .all(|c| c.get("index").is_some_and(Value::is_u64));
    form
}

/// The answer's finish, server ids, usage and each server's dressing.
fn dressing_seen(body: &Value, o: &mut Observation, clues: &mut Vec<Clue>) {
    let choice = &body["choices"][0];
    o.finish_reason = choice["finish_reason"].as_str().map(str::to_string);
    o.native_finish_reason = choice["native_finish_reason"].as_str().map(str::to_string);
    o.server_ids = if body
        .pointer("/__verbose/tokens")
        .is_some_and(Value::is_array)
    {
        Some("__verbose.tokens")
    } else if choice.get("token_ids").is_some_and(Value::is_array) {
        Some("token_ids")
    } else {
        None
    };
    o.llamacpp_dress = body.get("timings").is_some_and(Value::is_object)
        || body["system_fingerprint"]
            .as_str()
            .is_some_and(|f| f.starts_with('b') && f.contains('-'));
    clues.push(Clue::LlamaCppDress(o.llamacpp_dress));
    o.provider = body["provider"].as_str().map(str::to_string);
    o.cost = body.pointer("/usage/cost").and_then(Value::as_f64);
    o.openrouter_dress = o.provider.is_some() || o.cost.is_some();
    clues.push(Clue::OpenRouterDress(o.openrouter_dress));
    o.prompt_tokens = body.pointer("/usage/prompt_tokens").and_then(Value::as_u64);
    o.completion_tokens = body
        .pointer("/usage/completion_tokens")
        .and_then(Value::as_u64);
}

/// The tool-call openers: the model's family's, or every known family's.
fn tool_openers(expect: Option<&Expectation>) -> Vec<String> {
    let families: Vec<Family> = match expect {
        Some(e) => vec![e.profile.family],
        None => Family::all().to_vec(),
    };
    families
        .into_iter()
        .flat_map(|f| {
            f.spec()
                .tool_section_begin
                .map(str::to_string)
                .into_iter()
                .chain(f.call_opener())
        })
        .collect()
}

/// The text the model wrote, as the answer implies it in the family's own syntax: the raw
/// content when the server did not parse, else the family's rendering of the parsed fields
/// ([`Profile::completion_text`], the inverse the reconstruction uses), without the
/// end-of-turn token (servers never send it). Calls without a native id get the family's.
fn implied_text(
    expect: &Expectation,
    completion: &Completion,
    parsed: bool,
    cut: bool,
) -> Option<String> {
    let content = completion.content.clone().unwrap_or_default();
    if !parsed {
        return Some(content);
    }
    let profile = expect.profile;
    let tool_calls: Vec<ToolCall> = completion
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| ToolCall {
            id: match &call.id {
                Some(id) if profile.is_native_tool_call_id(id) => Some(id.clone()),
                _ => profile.native_tool_call_id(&call.name, i),
            },
            ..call.clone()
        })
        .collect();
    // A cut answer with nothing after its reasoning may have been cut inside it.
    let reasoning_closed = !(cut && content.is_empty() && tool_calls.is_empty());
    let turn = AssistantTurn {
        reasoning: completion.reasoning.clone(),
        reasoning_closed,
        content,
        tool_calls,
        end_of_turn: false,
    };
    profile.completion_text(&expect.input, &turn).ok()
}

/// The known shapes whose forward function sends back what was received, from the text the
/// answer implies in the model family's syntax (empty for a family servers know no syntax of).
fn forward_agreeing(
    body: &Value,
    expect: &Expectation,
    raw_markers: &[String],
    streamed: bool,
) -> Vec<String> {
    let Some(syntax) = expect.profile.family.syntax() else {
        return Vec::new();
    };
    let Ok(completion) = Completion::from_response(body) else {
        return Vec::new();
    };
    let content = completion.content.as_deref().unwrap_or_default();
    let parsed = !raw_markers.iter().any(|m| content.contains(m));
    let cut = completion.finish_reason.as_deref() == Some("length");
    let Some(text) = implied_text(expect, &completion, parsed, cut) else {
        return Vec::new();
    };
    let thinking = expect
        .profile
        .thinking_enabled(expect.input.chat_template_kwargs);
    let tools_declared = expect.input.tools.is_some_and(|t| !t.is_empty());
    SHAPES
        .iter()
        .filter(|shape| shape.known)
        .filter(|shape| {
            let input = ForwardInput {
                text: &text,
                cut,
                stream: streamed,
                spaces: false,
                thinking,
                tools_declared,
                history_calls: 0,
                syntax,
                prompt_closes_reasoning: false,
                first_token: None,
                tools: None,
            };
            forward(shape, &input)
                .agrees_with(shape, &completion)
                .is_ok()
        })
        .map(|shape| shape.describe())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_and_arguments_are_classified() {
        assert!(is_openrouter_id("call_0123456789abcdef01234567"));
        assert!(!is_openrouter_id("call_123"));
        assert!(is_native_id("functions.get_weather:0"));
        assert!(!is_native_id("functions.get_weather"));
        assert_eq!(argument_style(&json!("{\"a\": 1, \"b\": 2}")), "json.dumps");
        assert_eq!(argument_style(&json!("{\"a\":1}")), "compact");
        assert_eq!(argument_style(&json!(" {\"a\":1} ")), "padded");
        assert_eq!(argument_style(&json!({"a": 1})), "object");
    }

    #[test]
    fn raw_markers_mean_no_parser() {
        let body = json!({"choices": [{"message": {"content": "hm </think> hi"}, "finish_reason": "stop"}],
                          "timings": {}, "system_fingerprint": "b0-unknown"});
        let (o, clues) = observe(&body, None, false);
        assert_eq!(o.think_close, Some("left"));
        assert_eq!(o.spaces_around_markers, Some(true));
        assert!(clues.contains(&Clue::Parses(false)));
        assert!(clues.contains(&Clue::LlamaCppDress(true)));
    }
}
