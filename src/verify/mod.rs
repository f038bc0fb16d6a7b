//! `verify`: how far a run (or a build) can be trusted — the fidelity class of every sample, the
//! ids rebuilt from text against reference ids, the rebuilt lengths against the server's
//! `usage`, the tool-call audit ([`audit`]), per dataset (source) and per provider; written as
//! `verify.json` ([`VerifyReport`]) and `report.html` ([`html`]).
//!
//! The journal is streamed (`BATCH` records at a time, checked on all cores): what is held is
//! one 8-byte hash per sample id (duplicate successes count once, as in `build`), the figures of
//! each group, the attempt timeline per minute, and the first divergent samples' context.
//!
//! The gate ([`Gate`]): a run fails verification when any sample's ids are divergent from the
//! reference or of fidelity class `inconsistent`, when a record cannot be checked at all, and
//! (with `strict_tools`) when the tool-call audit raises a red flag.

pub mod audit;
mod build_rows;
pub mod compare;
pub mod conversations;
pub mod figures;
pub mod html;
mod html_tables;
mod html_trust;
pub mod providers;
mod reference;
mod sample;
mod svg;
pub mod timeline;
pub mod trust;
pub mod verdict;

pub use compare::{compare, Comparison, Divergence};
pub use figures::{
    DivergentSample, GroupFigures, LengthHistogram, ReferenceFigures, ReferenceSource,
    SampleCounts, SampleFigures, SampleTrust, UsageDelta, UsageFigures,
};
pub use providers::{Failures, ProviderRow, ProviderTable};
pub use reference::ReferenceFile;
pub use sample::without_server_ids;
pub use timeline::Timeline;
pub use trust::{BuildDrops, InconsistentSample};
pub use verdict::Verdict;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::build::conversation::{Pending, TurnRecord};
use crate::build::{read_sources, FileError, ProviderReport, Providers, RunSettings};
use crate::journal::{Record, RecordReader, RunDir, Status, JOURNAL_DIR, MANIFEST_FILE};
use crate::model::Profile;
use crate::reconstruct::FidelityClass;

/// File names written into the output directory.
pub const VERIFY_JSON: &str = "verify.json";
pub const REPORT_HTML: &str = "report.html";

/// Records checked per parallel batch.
const BATCH: usize = 256;
const MAX_PROBLEMS: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Bad input (not a run or build directory, an unreadable manifest or reference file).
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Audit(#[from] audit::AuditError),
}

/// A build directory's shards that cannot be read: the same messages verify gives its own input.
impl From<FileError> for VerifyError {
    fn from(e: FileError) -> VerifyError {
        match e {
            FileError::Io { path, source } => VerifyError::Io {
                path: path.display().to_string(),
                source,
            },
            other => VerifyError::Input(other.to_string()),
        }
    }
}

impl VerifyError {
    pub fn io(path: &Path, source: std::io::Error) -> VerifyError {
        VerifyError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// What to verify and how.
pub struct VerifyConfig<'a> {
    pub profile: &'a Profile,
    /// The `--model` argument, for the report.
    pub model_name: &'a str,
    /// A run directory (journal + manifest) or a build directory (Parquet shards).
    pub input: &'a Path,
    /// `--reference FILE` of `{"id", "output_ids"}` lines: overrides the server's ids.
    pub reference: Option<&'a Path>,
    /// `prompts.jsonl` to take sources from for records that do not carry theirs (the manifest's
    /// recorded prompts file is used otherwise, when its hash still matches).
    pub prompts: Option<&'a Path>,
    /// A second run on the same prompts, for the tool-call audit's F1 and schema accuracy.
    pub tools_reference_run: Option<&'a Path>,
    /// Tool-call red flags fail the gate.
    pub strict_tools: bool,
    /// Show a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
}

/// Pass or fail, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Gate {
    pub ok: bool,
    pub reasons: Vec<String>,
}

/// `verify.json`. The fields of docs/FORMATS.md and a few more for the report.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub draftgen_version: String,
    pub run: String,
    /// `run` (a journal) or `build` (Parquet rows).
    pub input: &'static str,
    pub model: String,
    pub samples: SampleCounts,
    /// Per fidelity class, its samples' reasons counted (`{"lossy": {"arguments_reserialized": 4}}`).
    pub fidelity_reasons: BTreeMap<String, BTreeMap<String, u64>>,
    pub reference: ReferenceFigures,
    pub usage: UsageFigures,
    pub prompt_lengths: LengthHistogram,
    pub completion_lengths: LengthHistogram,
    pub by_source: BTreeMap<String, GroupFigures>,
    pub by_provider: BTreeMap<String, GroupFigures>,
    /// Per provider: answers, failures, conventions, shares and a use / avoid verdict; the
    /// routing line for the run config.
    pub providers: ProviderTable,
    /// Failed attempts per provider and endpoint, and the provider that caused most of them.
    pub failures: Failures,
    /// The first [`trust::MAX_INCONSISTENT_SAMPLES`] inconsistent samples, by name.
    pub inconsistent_samples: Vec<InconsistentSample>,
    /// What `build` drops of these samples.
    pub build_drops: BuildDrops,
    pub tool_calls: audit::ToolAudit,
    /// Multi-turn runs: each conversation (one sample above) and its turns checked one by one.
    pub conversations: conversations::ConversationReport,
    /// Every attempt of the run over time (empty for a build directory).
    pub attempts: Timeline,
    /// How the run's server shaped text, as its manifest records it (run directories only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_settings: Option<RunSettings>,
    /// Records that could not be checked and unreadable lines, `FILE:LINE (id …): why` (the
    /// first 100; `unchecked` counts them all).
    pub problems: Vec<String>,
    pub unchecked: u64,
    pub gate: Gate,
    /// Whether the run verified was finished (prompts without an answer, a writer still
    /// appending); set by `draftgen verify` (`journal/completeness.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completeness: Option<crate::journal::Completeness>,
}

impl VerifyReport {
    fn new(config: &VerifyConfig, input: &'static str) -> VerifyReport {
        VerifyReport {
            draftgen_version: env!("CARGO_PKG_VERSION").to_string(),
            run: config.input.display().to_string(),
            input,
            model: config.model_name.to_string(),
            samples: SampleCounts::default(),
            fidelity_reasons: BTreeMap::new(),
            reference: ReferenceFigures::default(),
            usage: UsageFigures::default(),
            prompt_lengths: LengthHistogram::default(),
            completion_lengths: LengthHistogram::default(),
            by_source: BTreeMap::new(),
            by_provider: BTreeMap::new(),
            providers: ProviderTable::default(),
            failures: Failures::default(),
            inconsistent_samples: Vec::new(),
            build_drops: BuildDrops::default(),
            tool_calls: audit::ToolAudit::default(),
            conversations: conversations::ConversationReport::default(),
            attempts: Timeline::default(),
            run_settings: None,
            problems: Vec::new(),
            unchecked: 0,
            gate: Gate::default(),
            completeness: None,
        }
    }

    /// The reference file's unreadable lines count as unchecked (the gate sees them).
    fn note_reference(&mut self, reference: Option<&ReferenceFile>) {
        if let Some(reference) = reference {
            self.problems.extend(reference.problems.iter().cloned());
            self.unchecked += reference.bad_lines;
        }
    }

    fn note(&mut self, problem: String) {
        self.unchecked += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        }
    }

    /// Count one sample in the totals and in its source's and provider's groups.
    fn add(&mut self, overall: &mut GroupFigures, s: &SampleFigures, source: ReferenceSource) {
        overall.add(s, source);
        if s.fidelity == FidelityClass::Inconsistent
            && self.inconsistent_samples.len() < trust::MAX_INCONSISTENT_SAMPLES
        {
            self.inconsistent_samples.push(InconsistentSample::of(s));
        }
        let key = |k: &Option<String>| k.clone().unwrap_or_else(|| figures::UNKNOWN.into());
        self.by_source
            .entry(key(&s.source))
            .or_default()
            .add(s, source);
        self.by_provider
            .entry(key(&s.provider))
            .or_default()
            .add(s, source);
    }

    /// The provider table, failures' cause and build's drops. `groups`: the provider groups
    /// with their inferred conventions; `build_dropped`: a build directory's dropped rows per
    /// provider (`None` for a run).
    fn judge_providers(
        &mut self,
        groups: &[ProviderReport],
        build_dropped: Option<&BTreeMap<String, u64>>,
    ) {
        self.failures.attribute();
        let none = BTreeMap::new();
        self.providers = providers::table(
            &self.by_provider,
            &self.failures,
            groups,
            build_dropped.unwrap_or(&none),
        );
        let inconsistent = self
            .samples
            .by_fidelity
            .get(FidelityClass::Inconsistent.name())
            .copied()
            .unwrap_or(0);
        self.build_drops = BuildDrops::of(
            self.samples.total,
            inconsistent,
            build_dropped.map(|d| d.values().sum()),
        );
    }

    /// Move the overall group's figures into the report's top-level fields and decide the gate.
    fn finish(&mut self, overall: GroupFigures, strict_tools: bool) {
        self.samples.total = overall.samples;
        for (class, n) in &overall.by_fidelity {
            *self.samples.by_fidelity.entry(class.clone()).or_default() += n;
        }
        self.fidelity_reasons = overall.reasons_by_class;
        self.reference = overall.reference;
        self.usage = overall.usage;
        self.prompt_lengths = overall.prompt_lengths;
        self.completion_lengths = overall.completion_lengths;
        let mut reasons = Vec::new();
        if self.reference.divergent > 0 {
            reasons.push(format!(
                "{} sample(s) divergent from the reference ids",
                self.reference.divergent
            ));
        }
        let inconsistent = self
            .samples
            .by_fidelity
            .get(FidelityClass::Inconsistent.name())
            .copied()
            .unwrap_or(0);
        if inconsistent > 0 {
            reasons.push(format!(
                "{inconsistent} sample(s) of fidelity class inconsistent"
            ));
        }
        if self.unchecked > 0 {
            reasons.push(format!(
                "{} record(s) or line(s) could not be checked (see problems)",
                self.unchecked
            ));
        }
        if strict_tools {
            for flag in self.tool_calls.red_flags() {
                reasons.push(format!("tool calls: {flag}"));
            }
        }
        self.gate = Gate {
            ok: reasons.is_empty(),
            reasons,
        };
    }
}

/// Verify a run or build directory.
pub fn verify(config: &VerifyConfig) -> Result<VerifyReport, VerifyError> {
    let reference = config.reference.map(ReferenceFile::open).transpose()?;
    let report = if config.input.join(JOURNAL_DIR).is_dir()
        || config.input.join(MANIFEST_FILE).is_file()
    {
        verify_run(config, reference.as_ref())?
    } else if build_rows::is_build_dir(config.input) {
        verify_build(config, reference.as_ref())?
    } else {
        return Err(VerifyError::Input(format!(
            "{}: neither a run directory (journal/, manifest.json) nor a build directory (samples-*.parquet)",
            config.input.display()
        )));
    };
    Ok(report)
}

fn progress_bar(on: bool, what: &str) -> indicatif::ProgressBar {
    if !on {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{spinner}} verify: {{pos}} {what} checked ({{per_sec}}) {{elapsed}}"
    )) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Sources for records that do not carry their own: `--prompts`, else the manifest's recorded
/// prompts file when it still has the recorded hash.
fn fallback_sources(
    config: &VerifyConfig,
    report: &mut VerifyReport,
) -> Result<HashMap<String, String>, VerifyError> {
    let to_input = |e: crate::build::BuildError| VerifyError::Input(e.to_string());
    if let Some(path) = config.prompts {
        return read_sources(path).map_err(to_input);
    }
    let manifest = RunDir::new(config.input)
        .read_manifest()
        .map_err(|e| VerifyError::Input(e.to_string()))?;
    let Some(recorded) = manifest.and_then(|m| m.prompts) else {
        return Ok(HashMap::new());
    };
    let path = PathBuf::from(&recorded.path);
    match recorded.unchanged() {
        Ok(true) => read_sources(&path).map_err(to_input),
        Ok(false) => {
            report.problems.push(format!(
                "{}: changed since the run recorded it (sha256 differs); sources come from the journal only",
                path.display()
            ));
            Ok(HashMap::new())
        }
        Err(_) => Ok(HashMap::new()),
    }
}

/// Journal lines read at a time by the first pass that infers each provider's conventions.
const PROVIDER_BATCH: usize = 1024;

fn verify_run(
    config: &VerifyConfig,
    reference: Option<&ReferenceFile>,
) -> Result<VerifyReport, VerifyError> {
    let mut report = VerifyReport::new(config, "run");
    report.note_reference(reference);
    let settings =
        RunSettings::from_run(config.input).map_err(|e| VerifyError::Input(e.to_string()))?;
    report.run_settings = Some(settings);
    // Each record (a conversation's turns too) checked under its endpoint's shape and its provider's conventions,
    // inferred over the whole run as `build` infers them.
    let manifest = RunDir::new(config.input)
        .read_manifest()
        .map_err(|e| VerifyError::Input(e.to_string()))?;
    let mut providers = Providers::new(manifest.as_ref(), false);
    let journal_dir = config.input.join(JOURNAL_DIR);
    if journal_dir.is_dir() {
        providers
            .learn(config.profile, &journal_dir, PROVIDER_BATCH)
            .map_err(|e| VerifyError::Input(e.to_string()))?;
    }
    let sources = fallback_sources(config, &mut report)?;
    let reference_source = if reference.is_some() {
        ReferenceSource::File
    } else {
        ReferenceSource::ServerIds
    };
    let journal = config.input.join(JOURNAL_DIR);
    let mut reader = RecordReader::open(&journal).map_err(|e| VerifyError::Input(e.to_string()))?;
    let bar = progress_bar(config.progress, "records");
    let mut overall = GroupFigures::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut pending = Pending::default();
    loop {
        let batch = next_batch(&mut reader, &mut report, &mut seen, &mut pending)?;
        let complete = pending.take_complete();
        if !complete.is_empty() {
            check_conversations(
                config,
                &providers,
                &sources,
                reference,
                reference_source,
                complete,
                &mut report,
                &mut overall,
            )?;
        }
        if batch.is_empty() {
            break;
        }
        let checked = check_batch(config, &providers, &sources, reference, &batch)?;
        bar.inc(checked.len() as u64);
        for result in checked {
            match result {
                Ok(s) => report.add(&mut overall, &s, reference_source),
                Err(problem) => report.note(problem),
            }
        }
    }
    bar.finish_and_clear();
    note_incomplete(&mut report, &pending);
    report.tool_calls = audit::audit_run(
        config.input,
        config.profile,
        &audit::AuditOptions {
            reference_run: config.tools_reference_run,
        },
    )?;
    report.finish(overall, config.strict_tools);
    report.judge_providers(&providers.report(&[]), None);
    Ok(report)
}

/// Up to [`BATCH`] further single-turn successes, with their locations: every record read is
/// counted among the attempts, a duplicate success is skipped (build keeps the first one too), a
/// turn of a conversation goes to `pending`, an unreadable line is noted. Empty at the end.
fn next_batch(
    reader: &mut RecordReader,
    report: &mut VerifyReport,
    seen: &mut HashSet<u64>,
    pending: &mut Pending,
) -> Result<Vec<(String, Record)>, VerifyError> {
    let mut batch: Vec<(String, Record)> = Vec::with_capacity(BATCH);
    for item in reader.by_ref() {
        let (location, record) = item.map_err(|e| VerifyError::Input(e.to_string()))?;
        match record {
            Ok(record) => {
                report.attempts.add(&record);
                report.failures.add(&record);
                if record.status != Status::Success {
                    continue;
                }
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                record.id.hash(&mut hasher);
                if !seen.insert(hasher.finish()) {
                    continue;
                }
                let location = format!("{}:{}", location.segment.display(), location.line);
                // A turn of a multi-turn conversation waits for its other turns.
                let record = match TurnRecord::of(record, &location) {
                    Ok(turn) => {
                        pending.add(turn);
                        continue;
                    }
                    Err(record) => *record,
                };
                batch.push((location, record));
                if batch.len() == BATCH {
                    break;
                }
            }
            Err(corrupt) => report.note(format!(
                "{}:{}: {}",
                corrupt.location.segment.display(),
                corrupt.location.line,
                corrupt.reason
            )),
        }
    }
    Ok(batch)
}

/// Check a batch of single-turn records on all cores, each against its `--reference` ids.
fn check_batch(
    config: &VerifyConfig,
    providers: &Providers,
    sources: &HashMap<String, String>,
    reference: Option<&ReferenceFile>,
    batch: &[(String, Record)],
) -> Result<Vec<Result<SampleFigures, String>>, VerifyError> {
    let references = match reference {
        Some(file) => {
            let ids: Vec<&str> = batch.iter().map(|(_, r)| r.id.as_str()).collect();
            file.read(&ids)?
        }
        None => HashMap::new(),
    };
    Ok(batch
        .par_iter()
        .map(|(location, record)| {
            let source = record
                .source
                .clone()
                .or_else(|| sources.get(&record.id).cloned());
            let (options, conventions) =
                providers.rebuild_with(providers.group(record), &record.endpoint);
            sample::check_record(
                config.profile,
                options,
                conventions,
                record,
                source,
                reference.is_some(),
                references.get(&record.id).map(Vec::as_slice),
            )
            .map_err(|e| format!("{location} (id {}): {e}", record.id))
        })
        .collect())
}

/// Conversations some of whose turns never succeeded: counted and listed, not verified.
fn note_incomplete(report: &mut VerifyReport, pending: &Pending) {
    let incomplete = pending.incomplete();
    report.conversations.incomplete = incomplete.len() as u64;
    for id in incomplete {
        if report.problems.len() < MAX_PROBLEMS {
            report.problems.push(format!(
                "conversation {id}: some turns have no successful record; not verified (build leaves it out too)"
            ));
        }
    }
}

/// Check complete conversations (on all cores) and count each as one sample.
#[allow(clippy::too_many_arguments)]
fn check_conversations(
    config: &VerifyConfig,
    providers: &Providers,
    sources: &HashMap<String, String>,
    reference: Option<&ReferenceFile>,
    reference_source: ReferenceSource,
    complete: Vec<Vec<TurnRecord>>,
    report: &mut VerifyReport,
    overall: &mut GroupFigures,
) -> Result<(), VerifyError> {
    let references = match reference {
        Some(file) => {
            let ids: Vec<&str> = complete
                .iter()
                .flatten()
                .map(|t| t.record.id.as_str())
                .collect();
            file.read(&ids)?
        }
        None => HashMap::new(),
    };
    let checked: Vec<Result<conversations::Checked, String>> = complete
        .into_par_iter()
        .map(|turns| {
            conversations::check(
                config.profile,
                providers,
                sources,
                turns,
                reference.is_some(),
                &references,
            )
        })
        .collect();
    for result in checked {
        match result {
            Ok(c) => {
                report.add(overall, &c.sample, reference_source);
                report.conversations.add(c.figures);
            }
            Err(problem) => report.note(problem),
        }
    }
    Ok(())
}

fn verify_build(
    config: &VerifyConfig,
    reference: Option<&ReferenceFile>,
) -> Result<VerifyReport, VerifyError> {
    let mut report = VerifyReport::new(config, "build");
    report.note_reference(reference);
    // Not a gate failure: a build moved away from its run can still be checked for the rest.
    let usage = match build_rows::run_of(config.input).and_then(|run| build_rows::run_usage(&run)) {
        Ok(usage) => usage,
        Err(e) => {
            report
                .problems
                .push(format!("usage cross-check skipped: {e}"));
            HashMap::new()
        }
    };
    let bar = progress_bar(config.progress, "rows");
    let mut overall = GroupFigures::default();
    build_rows::for_each_batch(config.input, |rows| {
        let references = match reference {
            Some(file) => {
                let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
                file.read(&ids)?
            }
            None => HashMap::new(),
        };
        let checked: Vec<SampleFigures> = rows
            .into_par_iter()
            .map(|row| {
                let comparison = references
                    .get(&row.id)
                    .map(|r| compare(&config.profile.tokenizer, &row.completion, r));
                let (prompt_tokens, completion_tokens) =
                    usage.get(&row.id).copied().unwrap_or_default();
                SampleFigures {
                    completion_len: row.completion.len(),
                    id: row.id,
                    source: row.source,
                    provider: row.provider,
                    fidelity: row.fidelity,
                    prompt_len: row.prompt_len,
                    prompt_usage: prompt_tokens.map(|n| (n, row.prompt_len)),
                    completion_usage: completion_tokens.map(|n| (n, row.completion.len())),
                    comparison,
                    trust: SampleTrust {
                        reasons: row.reasons,
                        tool_calls: row.has_tool_calls,
                        call_id_form: None,
                    },
                }
            })
            .collect();
        bar.inc(checked.len() as u64);
        for s in &checked {
            report.add(&mut overall, s, ReferenceSource::File);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    report.finish(overall, config.strict_tools);
    let groups = build_rows::provider_groups(config.input);
    let mut dropped: BTreeMap<String, u64> = BTreeMap::new();
    for g in &groups {
        let name = g
            .provider
            .clone()
            .unwrap_or_else(|| figures::UNKNOWN.into());
        *dropped.entry(name).or_default() += g.dropped;
    }
    report.judge_providers(&groups, Some(&dropped));
    Ok(report)
}

/// Write `verify.json` and `report.html` into `out` (created).
pub fn write(report: &VerifyReport, out: &Path) -> Result<(PathBuf, PathBuf), VerifyError> {
    std::fs::create_dir_all(out).map_err(|e| VerifyError::io(out, e))?;
    let json_path = out.join(VERIFY_JSON);
    let mut text = serde_json::to_vec_pretty(report)
        .map_err(|e| VerifyError::Input(format!("verify.json: {e}")))?;
    text.push(b'\n');
    crate::journal::atomic_write(&json_path, &text)
        .map_err(|e| VerifyError::Input(e.to_string()))?;
    let html_path = out.join(REPORT_HTML);
    crate::journal::atomic_write(&html_path, html::render(report).as_bytes())
        .map_err(|e| VerifyError::Input(e.to_string()))?;
    Ok((json_path, html_path))
}
