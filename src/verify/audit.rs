//! The tool-call audit: per dataset (source) and per provider, how many
//! prompts declare tools and how many answers call them, and whether every call is right —
//! declared name, JSON arguments that fit the declared schema, the family's id form and
//! numbering, no markers leaked into text, no call opened inside reasoning, no calls despite
//! `tool_choice: "none"`, `finish_reason` agreeing with the calls and with
//! `native_finish_reason`, and the native rendering of the calls parsing back to the same calls.
//! With a reference run on the same prompts, K2-Vendor-Verifier's ToolCall-Trigger F1; its
//! ToolCall-Schema Accuracy always, as it defines it and with calls required, for tools as the
//! parameter and, separately, for tools declared only in the system prompt ([`k2vv`]). A call's
//! checks (name, JSON, schema) are each counted on their own; examples show a call's first.
//!
//! The seed pipeline's blind spot was a tool-call test set that never triggered a call: a dataset
//! that declares tools and gets no call is a red flag ([`ToolAudit::red_flags`]), as is a
//! provider below K2-Vendor-Verifier's thresholds.
//!
//! Input is the run directory alone: the journal's latest successful attempt per prompt id (its
//! `request` as sent and `response` as received) and, for the dataset of records written before
//! journal records carried `source`, the prompts file the manifest names.
//!
//! One job per file: [`declared`] (which tools a request declares, and where), [`schema`]
//! (arguments against schemas, K2-Vendor-Verifier's verdict), [`answer`] (the checks of one
//! answer), [`round_trip`], [`k2vv`] (metrics, thresholds), [`report`] (terminal and HTML).

pub mod answer;
pub mod declared;
pub mod k2vv;
pub mod report;
pub mod round_trip;
pub mod schema;

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::build::lines::JournalLines;
use crate::journal::{RunDir, Status};
use crate::model::Profile;
use answer::{AnswerAudit, Problem};
use declared::DeclaredIn;
use k2vv::{SchemaAccuracy, Thresholds, TriggerSimilarity};

/// How many examples of each problem the audit keeps for the report.
const EXAMPLES_PER_PROBLEM: usize = 8;

pub struct AuditOptions<'a> {
    /// A second run on the same prompts (another provider or the official API): trigger F1 and
    /// schema accuracy as K2-Vendor-Verifier defines them.
    pub reference_run: Option<&'a Path>,
}

/// The figures of one group of answers (the whole run, one dataset, one provider).
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Successful answers audited (latest successful attempt per prompt).
    pub answers: u64,
    /// Prompts that declare tools, either way.
    pub declaring_tools: u64,
    /// `declaring_tools / answers`.
    pub declaring_share: Option<f64>,
    /// Prompts that declare tools and do not forbid calls (`tool_choice` not `"none"`): the
    /// ones that can trigger.
    pub callable: u64,
    pub tools_as_parameter: u64,
    /// Tools only in the system prompt (glaive style).
    pub tools_in_system_prompt: u64,
    /// Answers with `finish_reason == "tool_calls"` or calls present.
    pub triggered: u64,
    /// `triggered / callable`.
    pub trigger_rate: Option<f64>,
    pub finish_tool_calls: u64,
    /// Answers that carry `native_finish_reason` (OpenRouter).
    pub with_native_finish_reason: u64,
    /// Answers by `finish_reason` (`(none)` when absent).
    pub finish_reasons: BTreeMap<String, u64>,
    /// Answers by `native_finish_reason`, where sent.
    pub native_finish_reasons: BTreeMap<String, u64>,
    pub calls: u64,
    /// Ids in the family's native form (Kimi `functions.NAME:IDX`).
    pub ids_native: u64,
    /// Ids a server minted (`call_…`): a known rewrite, not a defect.
    pub ids_rewritten: u64,
    pub round_trips_checked: u64,
    /// Findings by problem (a call-level problem counts per call, each of a call's checks on its
    /// own): every problem, zeros included.
    pub problems: BTreeMap<Problem, u64>,
    /// K2-Vendor-Verifier's ToolCall-Schema Accuracy, over answers to requests with the `tools`
    /// parameter (as K2-Vendor-Verifier defines it), and with calls required beside it.
    pub schema_accuracy: SchemaAccuracy,
    /// The same two figures over answers to requests whose tools are declared only in the
    /// system prompt (glaive style), the schemas read from the prompt.
    pub schema_accuracy_system_prompt: SchemaAccuracy,
    /// K2-Vendor-Verifier's ToolCall-Trigger Similarity against the reference run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_similarity: Option<TriggerSimilarity>,
}

impl Default for Figures {
    /// No answers; every problem listed at zero.
    fn default() -> Figures {
        Figures {
            answers: 0,
            declaring_tools: 0,
            declaring_share: None,
            callable: 0,
            tools_as_parameter: 0,
            tools_in_system_prompt: 0,
            triggered: 0,
            trigger_rate: None,
            finish_tool_calls: 0,
            with_native_finish_reason: 0,
            finish_reasons: BTreeMap::new(),
            native_finish_reasons: BTreeMap::new(),
            calls: 0,
            ids_native: 0,
            ids_rewritten: 0,
            round_trips_checked: 0,
            problems: Problem::ALL.iter().map(|p| (*p, 0)).collect(),
            schema_accuracy: SchemaAccuracy::default(),
            schema_accuracy_system_prompt: SchemaAccuracy::default(),
            trigger_similarity: None,
        }
    }
}

impl Figures {
    fn add(&mut self, a: &AnswerAudit) {
        self.answers += 1;
        match a.declared_in {
            Some(DeclaredIn::Parameter) => self.tools_as_parameter += 1,
            Some(DeclaredIn::SystemPrompt) => self.tools_in_system_prompt += 1,
            None => {}
        }
        self.declaring_tools += u64::from(a.declared_in.is_some());
        self.callable += u64::from(a.declared_in.is_some() && !a.tool_choice_none);
        self.triggered += u64::from(a.triggered);
        self.finish_tool_calls += u64::from(a.finish_reason.as_deref() == Some("tool_calls"));
        self.with_native_finish_reason += u64::from(a.native_finish_reason.is_some());
        let finish = a.finish_reason.as_deref().unwrap_or("(none)");
        *self.finish_reasons.entry(finish.to_string()).or_insert(0) += 1;
        if let Some(native) = &a.native_finish_reason {
            *self
                .native_finish_reasons
                .entry(native.clone())
                .or_insert(0) += 1;
        }
        self.calls += a.calls as u64;
        self.ids_native += a.ids_native as u64;
        self.ids_rewritten += a.ids_rewritten as u64;
        self.round_trips_checked += u64::from(a.round_trip_checked);
        for found in &a.found {
            *self.problems.entry(found.problem).or_insert(0) += 1;
        }
        if let Some(k) = a.k2vv {
            let figure = match k.declared_in {
                DeclaredIn::Parameter => &mut self.schema_accuracy,
                DeclaredIn::SystemPrompt => &mut self.schema_accuracy_system_prompt,
            };
            figure.add(k.finish_tool_calls, k.calls, k.all_valid);
        }
    }

    fn finish(&mut self) {
        self.declaring_share =
            (self.answers > 0).then(|| self.declaring_tools as f64 / self.answers as f64);
        self.trigger_rate =
            (self.callable > 0).then(|| self.triggered as f64 / self.callable as f64);
        self.schema_accuracy.finish();
        self.schema_accuracy_system_prompt.finish();
        if let Some(t) = &mut self.trigger_similarity {
            t.finish();
        }
    }

    /// Findings of `problem`.
    pub fn count(&self, problem: Problem) -> u64 {
        self.problems.get(&problem).copied().unwrap_or(0)
    }
}

/// One problem found, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub id: String,
    pub source: String,
    pub provider: String,
    pub problem: Problem,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
    pub detail: String,
}

/// The reference run's pairing with this one.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceRun {
    pub run: String,
    pub answers: u64,
    /// Prompts answered successfully in both runs (what F1 compares).
    pub paired: u64,
    pub only_here: u64,
    pub only_in_reference: u64,
}

/// The tool-call audit of a run.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ToolAudit {
    /// Where each answer's dataset came from: `journal` (records carry `source`),
    /// `prompts_file` (the manifest's prompts file, by prompt id), `mixed`, or `none`.
    pub source_from: String,
    pub all: Figures,
    pub by_source: BTreeMap<String, Figures>,
    pub by_provider: BTreeMap<String, Figures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceRun>,
    pub thresholds: Option<Thresholds>,
    /// Successful records whose response is not a readable chat completion (`FILE:LINE: why`).
    pub unreadable: Vec<String>,
    /// Up to a few examples of each problem.
    pub examples: Vec<Example>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: not a run directory (no journal/ inside)")]
    NotARun { path: String },
}

/// Label of answers without a source or provider.
pub const UNKNOWN: &str = "(unknown)";

/// The fields of a journal line the audit reads (others, including ones added later, are
/// ignored); `source` is optional for journals written before records carried it.
#[derive(Deserialize)]
struct Line {
    id: String,
    attempt: u32,
    status: Status,
    #[serde(default)]
    endpoint: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    request: Value,
    #[serde(default)]
    response: Option<Value>,
}

/// The audit of one prompt's latest successful answer.
struct Audited {
    attempt: u32,
    source: Option<String>,
    provider: String,
    audit: AnswerAudit,
}

/// Reads the run directory's journal (latest successful attempt per id) and manifest.
pub fn audit_run(
    run_dir: &Path,
    profile: &Profile,
    opts: &AuditOptions,
) -> Result<ToolAudit, AuditError> {
    let mut unreadable = Vec::new();
    let answers = read_answers(run_dir, profile, &mut unreadable)?;
    let reference = match opts.reference_run {
        Some(dir) => {
            let mut ignored = Vec::new();
            Some((dir, read_answers(dir, profile, &mut ignored)?))
        }
        None => None,
    };

    // The dataset of each answer: the record's own `source`, else the prompts file's.
    let missing = answers.values().filter(|a| a.source.is_none()).count();
    let from_file = if missing > 0 {
        prompts_sources(run_dir)
    } else {
        HashMap::new()
    };
    let mut audit = ToolAudit {
        source_from: source_from(missing, answers.len(), from_file.is_empty()).to_string(),
        all: Figures::default(),
        thresholds: Some(Thresholds::for_family(profile.family)),
        unreadable,
        ..ToolAudit::default()
    };
    let mut per_problem: HashMap<Problem, usize> = HashMap::new();
    let mut ids: Vec<&String> = answers.keys().collect();
    ids.sort();
    for id in ids {
        let a = &answers[id];
        let source = a
            .source
            .clone()
            .or_else(|| from_file.get(id.as_str()).cloned())
            .unwrap_or_else(|| UNKNOWN.to_string());
        let theirs = reference.as_ref().and_then(|(_, r)| r.get(id));
        audit.add(a, &source, theirs);
        audit.keep_examples(id, a, &source, &mut per_problem);
    }
    if let Some((dir, reference)) = &reference {
        audit.note_reference_run(dir, &answers, reference);
    }
    audit.finish();
    Ok(audit)
}

/// Where the answers' datasets came from: `missing` of `answers` carry no `source`, and the
/// prompts file gave none (`file_empty`) or some.
fn source_from(missing: usize, answers: usize, file_empty: bool) -> &'static str {
    match (missing, answers, file_empty) {
        (0, 0, _) => "none",
        (0, _, _) => "journal",
        (m, n, false) if m == n => "prompts_file",
        (_, _, false) => "mixed",
        (m, n, true) if m == n => "none",
        (_, _, true) => "journal",
    }
}

impl ToolAudit {
    /// One answer into the figures of all, its dataset and its provider, and its trigger against
    /// the reference run's answer to the same prompt.
    fn add(&mut self, a: &Audited, source: &str, reference: Option<&Audited>) {
        self.all.add(&a.audit);
        group(&mut self.by_source, source).add(&a.audit);
        group(&mut self.by_provider, &a.provider).add(&a.audit);
        if let Some(r) = reference {
            let ours = a.audit.finish_reason.as_deref() == Some("tool_calls");
            let theirs = r.audit.finish_reason.as_deref() == Some("tool_calls");
            for figures in [
                &mut self.all,
                group(&mut self.by_source, source),
                group(&mut self.by_provider, &a.provider),
            ] {
                figures
                    .trigger_similarity
                    .get_or_insert_with(TriggerSimilarity::default)
                    .add(ours, theirs);
            }
        }
    }

    /// The first [`EXAMPLES_PER_PROBLEM`] findings of each problem, for the report; of a call
    /// with several problems, only its first.
    fn keep_examples(
        &mut self,
        id: &str,
        a: &Audited,
        source: &str,
        per_problem: &mut HashMap<Problem, usize>,
    ) {
        let mut calls_seen = std::collections::HashSet::new();
        for found in &a.audit.found {
            if found.call.is_some_and(|call| !calls_seen.insert(call)) {
                continue;
            }
            let seen = per_problem.entry(found.problem).or_insert(0);
            if *seen < EXAMPLES_PER_PROBLEM {
                *seen += 1;
                self.examples.push(Example {
                    id: id.to_string(),
                    source: source.to_string(),
                    provider: a.provider.clone(),
                    problem: found.problem,
                    call: found.call,
                    detail: found.detail.clone(),
                });
            }
        }
    }

    /// The reference run's counts; every group compares against it, even when none of its
    /// prompts paired.
    fn note_reference_run(
        &mut self,
        dir: &Path,
        answers: &HashMap<String, Audited>,
        reference: &HashMap<String, Audited>,
    ) {
        let paired = answers
            .keys()
            .filter(|id| reference.contains_key(*id))
            .count() as u64;
        self.reference = Some(ReferenceRun {
            run: dir.display().to_string(),
            answers: reference.len() as u64,
            paired,
            only_here: answers.len() as u64 - paired,
            only_in_reference: reference.len() as u64 - paired,
        });
        for figures in std::iter::once(&mut self.all)
            .chain(self.by_source.values_mut())
            .chain(self.by_provider.values_mut())
        {
            figures
                .trigger_similarity
                .get_or_insert_with(TriggerSimilarity::default);
        }
    }

    /// Rates from the counts, examples in problem then id order.
    fn finish(&mut self) {
        self.all.finish();
        for figures in self
            .by_source
            .values_mut()
            .chain(self.by_provider.values_mut())
        {
            figures.finish();
        }
        self.examples
            .sort_by(|a, b| (a.problem, &a.id).cmp(&(b.problem, &b.id)));
    }
}

fn group<'a>(groups: &'a mut BTreeMap<String, Figures>, key: &str) -> &'a mut Figures {
    groups.entry(key.to_string()).or_default()
}

/// The latest successful attempt of every prompt in `run_dir`'s journal, audited.
fn read_answers(
    run_dir: &Path,
    profile: &Profile,
    unreadable: &mut Vec<String>,
) -> Result<HashMap<String, Audited>, AuditError> {
    let run = RunDir::new(run_dir);
    let journal = run.journal_dir();
    if !journal.is_dir() {
        return Err(AuditError::NotARun {
            path: run_dir.display().to_string(),
        });
    }
    let mut lines = JournalLines::open(&journal).map_err(io(&journal))?;
    let mut schemas = schema::Schemas::default();
    let mut answers: HashMap<String, Audited> = HashMap::new();
    loop {
        let batch = lines.next_batch(1024).map_err(io(&journal))?;
        if batch.is_empty() {
            return Ok(answers);
        }
        for raw in batch {
            match audit_line(&raw.bytes, profile, &mut schemas, &answers) {
                Ok(Some((id, audited))) => {
                    answers.insert(id, audited);
                }
                Ok(None) => {}
                Err(e) => unreadable.push(format!(
                    "{}:{}: {e}",
                    lines.segment_path(raw.segment).display(),
                    raw.line
                )),
            }
        }
    }
}

/// One journal line audited, when it is a success later than the one `answers` holds for its
/// prompt; `Err` when it cannot be read or audited.
fn audit_line(
    bytes: &[u8],
    profile: &Profile,
    schemas: &mut schema::Schemas,
    answers: &HashMap<String, Audited>,
) -> Result<Option<(String, Audited)>, String> {
    // Cheap filter before the full parse: only successes are audited.
    if memchr::memmem::find(bytes, b"\"status\":\"success\"").is_none() {
        return Ok(None);
    }
    let line: Line = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if line.status != Status::Success
        || answers
            .get(&line.id)
            .is_some_and(|a| a.attempt >= line.attempt)
    {
        return Ok(None);
    }
    let response = line
        .response
        .as_ref()
        .ok_or("a success without a response")?;
    let audit = answer::audit_answer(&line.request, response, profile, schemas)?;
    let provider = line
        .provider
        .clone()
        .or_else(|| {
            response
                .get("provider")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| {
            if line.endpoint.is_empty() {
                UNKNOWN.to_string()
            } else {
                line.endpoint.clone()
            }
        });
    let audited = Audited {
        attempt: line.attempt,
        source: line.source,
        provider,
        audit,
    };
    Ok(Some((line.id, audited)))
}

/// Prompt id → source from the prompts file the manifest names (`prompts_path`,
/// `prompts_file`, or `prompts` as a path or `{"path"}`), resolved as written and then relative to
/// the run directory. Empty when there is none or it cannot be read: answers are then `(unknown)`.
fn prompts_sources(run_dir: &Path) -> HashMap<String, String> {
    let run = RunDir::new(run_dir);
    let Some(manifest) = std::fs::read(run.manifest_path())
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return HashMap::new();
    };
    let named = ["prompts_path", "prompts_file", "prompts"]
        .iter()
        .find_map(|key| match manifest.get(*key) {
            Some(Value::String(path)) => Some(path.clone()),
            Some(Value::Object(o)) => o.get("path").and_then(Value::as_str).map(str::to_string),
            _ => None,
        });
    let Some(named) = named else {
        return HashMap::new();
    };
    let path = [PathBuf::from(&named), run_dir.join(&named)]
        .into_iter()
        .find(|p| p.is_file());
    let Some(file) = path.and_then(|p| std::fs::File::open(p).ok()) else {
        return HashMap::new();
    };
    #[derive(Deserialize)]
    struct IdSource {
        id: String,
        source: String,
    }
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<IdSource>(&line).ok())
        .map(|p| (p.id, p.source))
        .collect()
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> AuditError + '_ {
    move |e| AuditError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl ToolAudit {
    /// One line per problem a user must see in red (datasets that declare tools but never trigger
    /// a call; providers below K2-Vendor-Verifier's thresholds). Empty when none.
    pub fn red_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        for (source, f) in &self.by_source {
            // Prompts whose request forbids calls (`tool_choice: "none"`) are not expected to.
            if f.callable > 0 && f.triggered == 0 {
                flags.push(format!(
                    "dataset {source}: {} prompts declare tools ({} as the tools parameter, {} only in the system prompt) but no answer called a tool: it tests no tool calling",
                    f.declaring_tools, f.tools_as_parameter, f.tools_in_system_prompt
                ));
            }
        }
        let Some(t) = &self.thresholds else {
            return flags;
        };
        for (provider, f) in &self.by_provider {
            let s = &f.schema_accuracy;
            if let Some(acc) = s.schema_accuracy.filter(|a| *a < t.schema_accuracy_min) {
                flags.push(format!(
                    "provider {provider}: ToolCall-Schema Accuracy {:.2}% ({} of {} tool_calls answers valid as K2-Vendor-Verifier counts them, {} with calls required), below K2-Vendor-Verifier's {:.0}%",
                    acc * 100.0,
                    s.count_successful_tool_call,
                    s.count_finish_reason_tool_calls,
                    s.count_successful_tool_call_with_calls,
                    t.schema_accuracy_min * 100.0
                ));
            }
            if let Some(f1) = f
                .trigger_similarity
                .as_ref()
                .and_then(|s| s.tool_call_f1)
                .filter(|f1| *f1 < t.tool_call_f1_min)
            {
                flags.push(format!(
                    "provider {provider}: ToolCall-Trigger F1 {:.2}% against the reference, below K2-Vendor-Verifier's {:.0}% ({})",
                    f1 * 100.0,
                    t.tool_call_f1_min * 100.0,
                    t.basis
                ));
            }
        }
        flags
    }

    /// Plain-text table for the terminal (per dataset, per provider).
    pub fn terminal_table(&self) -> String {
        report::terminal_table(self)
    }

    /// A self-contained HTML fragment (a <section>, inline SVG/CSS only, no script needed, no
    /// network) that `report.html` embeds.
    pub fn html_section(&self) -> String {
        report::html_section(self)
    }
}
