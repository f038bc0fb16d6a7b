//! The audit of one answer: its request's declared tools against the calls that came back.
//!
//! Every check reads only the request as sent and the response as received (the journal's
//! `request` and `response`), plus the model profile for the family's markers, id rule and native
//! rendering (the round trip, [`super::round_trip`]).

use serde::Serialize;
use serde_json::Value;

use super::declared::{Declared, DeclaredIn};
use super::round_trip;
use super::schema::{k2vv_call_valid, k2vv_tools, CallVerdict, Schemas};
use crate::completion::{Completion, ToolCall};
use crate::model::family::Family;
use crate::model::Profile;
use crate::server::Syntax;

/// One kind of defect the audit can find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// A call names a tool the request did not declare.
    UndeclaredName,
    /// A call's arguments are not valid JSON.
    InvalidJson,
    /// A call's arguments do not fit the declared tool's JSON schema (checked where the name is
    /// declared and the arguments are JSON; the name and JSON checks are made on every call).
    SchemaViolation,
    /// The declared tool's schema is itself not a valid JSON schema.
    UnusableSchema,
    /// A call id in neither the family's native form nor a known minted form (`call_…`).
    IdMalformed,
    /// A native id (`functions.NAME:IDX`) whose NAME or IDX is not the call's own.
    IdMisnumbered,
    /// Tool-call markers in `content`: a call the server did not parse.
    MarkersInContent,
    /// Tool-call markers in the reasoning (other than a call opened there).
    MarkersInReasoning,
    /// A tool call (section or call begin marker) opened inside the reasoning.
    CallInReasoning,
    /// Calls in an answer whose request said `tool_choice: "none"`.
    CallsDespiteToolChoiceNone,
    /// `finish_reason` and `native_finish_reason` disagree on whether the answer called tools.
    FinishReasonDisagreement,
    /// `finish_reason` is `tool_calls` and there are no calls.
    FinishWithoutCalls,
    /// Calls are present and `finish_reason` is neither `tool_calls` nor `length`.
    CallsWithoutFinish,
    /// The family's native rendering of the calls does not parse back to the same calls.
    RoundTrip,
}

impl Problem {
    pub const ALL: [Problem; 14] = [
        Problem::UndeclaredName,
        Problem::InvalidJson,
        Problem::SchemaViolation,
        Problem::UnusableSchema,
        Problem::IdMalformed,
        Problem::IdMisnumbered,
        Problem::MarkersInContent,
        Problem::MarkersInReasoning,
        Problem::CallInReasoning,
        Problem::CallsDespiteToolChoiceNone,
        Problem::FinishReasonDisagreement,
        Problem::FinishWithoutCalls,
        Problem::CallsWithoutFinish,
        Problem::RoundTrip,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Problem::UndeclaredName => "undeclared_name",
            Problem::InvalidJson => "invalid_json",
            Problem::SchemaViolation => "schema_violation",
            Problem::UnusableSchema => "unusable_schema",
            Problem::IdMalformed => "id_malformed",
            Problem::IdMisnumbered => "id_misnumbered",
            Problem::MarkersInContent => "markers_in_content",
            Problem::MarkersInReasoning => "markers_in_reasoning",
            Problem::CallInReasoning => "call_in_reasoning",
            Problem::CallsDespiteToolChoiceNone => "calls_despite_tool_choice_none",
            Problem::FinishReasonDisagreement => "finish_reason_disagreement",
            Problem::FinishWithoutCalls => "finish_without_calls",
            Problem::CallsWithoutFinish => "calls_without_finish",
            Problem::RoundTrip => "round_trip",
        }
    }

    /// A short column label for the terminal table.
    pub fn label(self) -> &'static str {
        match self {
            Problem::UndeclaredName => "undecl",
            Problem::InvalidJson => "badjson",
            Problem::SchemaViolation => "schema",
            Problem::UnusableSchema => "badschema",
            Problem::IdMalformed => "id-bad",
            Problem::IdMisnumbered => "id-num",
            Problem::MarkersInContent => "mk-cont",
            Problem::MarkersInReasoning => "mk-reas",
            Problem::CallInReasoning => "call-reas",
            Problem::CallsDespiteToolChoiceNone => "ch-none",
            Problem::FinishReasonDisagreement => "fin-native",
            Problem::FinishWithoutCalls => "fin-nocall",
            Problem::CallsWithoutFinish => "call-nofin",
            Problem::RoundTrip => "roundtrip",
        }
    }
}

/// One finding: the problem, which call (if it is about one), and what exactly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub problem: Problem,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
    pub detail: String,
}

/// K2-Vendor-Verifier's view of one answer to a request that declares tools (as the `tools`
/// parameter, as all of its requests do, or only in the system prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct K2vvAnswer {
    pub declared_in: DeclaredIn,
    /// `finish_reason == "tool_calls"`.
    pub finish_tool_calls: bool,
    pub calls: usize,
    /// `all(validate_tool_call(tc, tools) for tc in tool_calls)`: true when there are no calls.
    pub all_valid: bool,
}

/// Everything the audit learned from one answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerAudit {
    pub declared_in: Option<DeclaredIn>,
    /// The request said `tool_choice: "none"`.
    pub tool_choice_none: bool,
    pub finish_reason: Option<String>,
    pub native_finish_reason: Option<String>,
    /// `finish_reason == "tool_calls"` or calls present.
    pub triggered: bool,
    pub calls: usize,
    pub ids_native: usize,
    /// Ids a server minted (`call_…`): not the model's, but a known form.
    pub ids_rewritten: usize,
    pub round_trip_checked: bool,
    pub k2vv: Option<K2vvAnswer>,
    pub found: Vec<Found>,
}

impl AnswerAudit {
    fn found(&mut self, problem: Problem, call: Option<usize>, detail: String) {
        self.found.push(Found {
            problem,
            call,
            detail,
        });
    }
}

/// Audit one answer. `Err` when the response is not a readable chat completion.
pub fn audit_answer(
    request: &Value,
    response: &Value,
    profile: &Profile,
    schemas: &mut Schemas,
) -> Result<AnswerAudit, String> {
    let completion = Completion::from_response(response).map_err(|e| e.to_string())?;
    let choice = response.pointer("/choices/0");
    let text = |key: &str| {
        choice
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let declared = Declared::of(request);
    let calls = &completion.tool_calls;
    let mut audit = AnswerAudit {
        declared_in: declared.place,
        finish_reason: text("finish_reason"),
        native_finish_reason: text("native_finish_reason"),
        calls: calls.len(),
        tool_choice_none: request.get("tool_choice").and_then(Value::as_str) == Some("none"),
        ..AnswerAudit::default()
    };
    let finish_tool_calls = audit.finish_reason.as_deref() == Some("tool_calls");
    audit.triggered = finish_tool_calls || !calls.is_empty();
    check_finish(&mut audit, finish_tool_calls);

    // Markers where text should be.
    let syntax = Syntax::of(profile.family);
    let (markers, openers) = family_markers(profile.family, &declared);
    check_markers(&mut audit, &completion, &markers, &openers);

    // Every call: name, JSON, schema, id.
    let history = prior_tool_calls(request);
    let ids_in_stream = syntax.is_some_and(Syntax::ids_in_stream);
    let tools = k2vv_tools(request, &declared);
    let mut all_valid = true;
    for (i, call) in calls.iter().enumerate() {
        check_call(&mut audit, schemas, &declared, i, call);
        all_valid &= k2vv_call_valid(schemas, &tools, &call.name, &call.arguments);
        if ids_in_stream {
            check_id(&mut audit, profile.family, i, call, history + i);
        }
    }
    audit.k2vv = declared.place.map(|declared_in| K2vvAnswer {
        declared_in,
        finish_tool_calls,
        calls: calls.len(),
        all_valid,
    });

    // The round trip through the family's native syntax.
    if !calls.is_empty() && syntax.is_some() {
        audit.round_trip_checked = true;
        if let Err(why) = round_trip::check(request, calls, history, profile) {
            audit.found(Problem::RoundTrip, None, why);
        }
    }
    Ok(audit)
}

/// `finish_reason` against the calls, against the provider's own value, and calls made although
/// `tool_choice` was `"none"`.
fn check_finish(audit: &mut AnswerAudit, finish_tool_calls: bool) {
    let calls = audit.calls;
    if finish_tool_calls && calls == 0 {
        audit.found(
            Problem::FinishWithoutCalls,
            None,
            "finish_reason \"tool_calls\" with no tool_calls".into(),
        );
    }
    let finish = audit.finish_reason.clone().unwrap_or_default();
    if calls > 0 && finish != "tool_calls" && finish != "length" {
        audit.found(
            Problem::CallsWithoutFinish,
            None,
            format!("{calls} calls with finish_reason {finish:?}"),
        );
    }
    if let Some(native) = audit.native_finish_reason.clone() {
        if native_calls_tools(&native) != finish_tool_calls {
            audit.found(
                Problem::FinishReasonDisagreement,
                None,
                format!("finish_reason {finish:?}, native_finish_reason {native:?}"),
            );
        }
    }
    if audit.tool_choice_none && calls > 0 {
        audit.found(
            Problem::CallsDespiteToolChoiceNone,
            None,
            format!("{calls} calls although tool_choice is \"none\""),
        );
    }
}

/// The family's markers (its tool grammar's, and those only it writes) and what opens one of
/// its calls: the grammar's openers, and the family's own call text up to a declared tool's
/// name (`Family::call_opener`: harmony's `to=functions.NAME`, Llama's `{"name": "NAME`, which
/// have no marker of their own).
fn family_markers(family: Family, declared: &Declared) -> (Vec<String>, Vec<String>) {
    let spec = family.spec();
    let grammar = spec.tool_grammar;
    let calls: Vec<String> = family
        .call_opener()
        .into_iter()
        .flat_map(|opener| {
            declared
                .tools
                .iter()
                .map(move |tool| format!("{opener}{}", tool.name))
        })
        .collect();
    let mut openers: Vec<String> = grammar
        .map_or(&[][..], |g| g.openers)
        .iter()
        .map(|m| m.to_string())
        .chain(calls)
        .collect();
    openers.dedup();
    let mut markers: Vec<String> = grammar
        .map_or(&[][..], |g| g.markers)
        .iter()
        .chain(spec.distinctive_markers)
        .map(|m| m.to_string())
        .chain(openers.iter().cloned())
        .collect();
    markers.dedup();
    (markers, openers)
}

/// The family's markers in the content, a call opened (or any marker) in the reasoning.
fn check_markers(
    audit: &mut AnswerAudit,
    completion: &Completion,
    markers: &[String],
    openers: &[String],
) {
    if let Some(marker) = first_marker(completion.content.as_deref(), markers) {
        audit.found(
            Problem::MarkersInContent,
            None,
            format!("content contains {marker}"),
        );
    }
    if let Some(marker) = first_marker(completion.reasoning.as_deref(), openers) {
        audit.found(
            Problem::CallInReasoning,
            None,
            format!("reasoning opens a call with {marker}"),
        );
    } else if let Some(marker) = first_marker(completion.reasoning.as_deref(), markers) {
        audit.found(
            Problem::MarkersInReasoning,
            None,
            format!("reasoning contains {marker}"),
        );
    }
}

/// Call `i`'s name, JSON and schema against what the request declared: every problem found,
/// the call's first one first.
fn check_call(
    audit: &mut AnswerAudit,
    schemas: &mut Schemas,
    declared: &Declared,
    i: usize,
    call: &ToolCall,
) {
    for verdict in schemas.check(declared, &call.name, &call.arguments) {
        match verdict {
            CallVerdict::UndeclaredName => audit.found(
                Problem::UndeclaredName,
                Some(i),
                format!("{:?} is not declared", call.name),
            ),
            CallVerdict::InvalidJson(e) => {
                audit.found(Problem::InvalidJson, Some(i), format!("{}: {e}", call.name))
            }
            CallVerdict::SchemaViolation(e) => audit.found(
                Problem::SchemaViolation,
                Some(i),
                format!("{}: {e}", call.name),
            ),
            CallVerdict::UnusableSchema(e) => audit.found(
                Problem::UnusableSchema,
                Some(i),
                format!("{}: {e}", call.name),
            ),
        }
    }
}

/// Call `i`'s id, the conversation's call number `index` in the family's id form.
fn check_id(audit: &mut AnswerAudit, family: Family, i: usize, call: &ToolCall, index: usize) {
    match id_form(family, call, index) {
        IdForm::Native => audit.ids_native += 1,
        IdForm::Rewritten => audit.ids_rewritten += 1,
        IdForm::Misnumbered(id) => {
            audit.ids_native += 1;
            audit.found(
                Problem::IdMisnumbered,
                Some(i),
                format!(
                    "id {id:?} for call {index} of the conversation ({})",
                    call.name
                ),
            )
        }
        IdForm::Malformed(id) => audit.found(Problem::IdMalformed, Some(i), format!("id {id:?}")),
    }
}

/// Provider-native finish reasons that mean "called tools" (OpenAI `tool_calls`, Anthropic
/// `tool_use`, the older OpenAI `function_call`).
fn native_calls_tools(native: &str) -> bool {
    matches!(
        native.to_ascii_lowercase().as_str(),
        "tool_calls" | "tool_use" | "function_call"
    )
}

fn first_marker<'m>(text: Option<&str>, markers: &'m [String]) -> Option<&'m str> {
    let text = text?;
    markers
        .iter()
        .map(String::as_str)
        .find(|m| text.contains(m))
}

/// Tool calls made by the assistant turns of the request (the numbering continues from there).
pub fn prior_tool_calls(request: &Value) -> usize {
    request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .map(Vec::len)
        .sum()
}

enum IdForm {
    Native,
    Rewritten,
    Misnumbered(String),
    Malformed(String),
}

/// The family's id rule (Kimi's: `functions.NAME:IDX`, official histories also writing
/// `NAME:IDX`), IDX the call's number in the conversation: the id the family's rules give the
/// call, with or without what comes before the name. Minted ids (`call_…`, `chatcmpl-tool-…`,
/// `toolu_…`) are a known server habit, not the model's; anything else is malformed (e.g. a
/// client's sanitized `functions_NAME_1`).
fn id_form(family: Family, call: &ToolCall, expected_index: usize) -> IdForm {
    let id = call.id.as_deref().unwrap_or("");
    let rules = family.rules();
    if rules.is_native_tool_call_id(id) {
        let own = rules
            .native_tool_call_id(&call.name, expected_index)
            .unwrap_or_default();
        let bare = own.find(call.name.as_str()).map_or("", |at| &own[at..]);
        if id == own || id == bare {
            return IdForm::Native;
        }
        return IdForm::Misnumbered(id.to_string());
    }
    const MINTED: [&str; 5] = ["call_", "call-", "chatcmpl-tool-", "toolu_", "fc_"];
    let minted = MINTED.iter().any(|prefix| {
        id.strip_prefix(prefix).is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
    });
    if minted {
        IdForm::Rewritten
    } else {
        IdForm::Malformed(id.to_string())
    }
}
