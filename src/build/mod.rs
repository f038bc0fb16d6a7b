//! `build`: a run directory → training samples (sharded Parquet, optional JSONL, `build.json`).
//!
//! Every successful journal record becomes one [`Row`] (multi-turn: every turn of a conversation
//! together becomes one row, see [`conversation`]); the [`Policies`] decide which rows are kept;
//! the summary ([`Counts`]) accounts for every record. The output contract (columns, types,
//! `build.json`) is docs/FORMATS.md.
//!
//! Memory is bounded by a batch, not by the run: the journal is read `batch` lines at a time, a
//! batch is parsed and reconstructed on all cores (rayon), and its rows go to a writer thread
//! (Parquet encoding and zstd) through a queue of two batches, in journal order. What is held
//! across batches: one 8-byte hash per written sample id (to drop duplicate successes), the
//! prompt-id → source map when `--prompts` is given, the turns of conversations whose last
//! turn has not been read yet, and one tally per provider group. Before the first batch,
//! [`Providers::learn`] reads the journal once for each provider's conventions
//! ([`providers`]), so every record is rebuilt under what the whole run shows.

pub mod conversation;
pub mod import;
mod info;
pub mod jsonl_samples;
pub(crate) mod lines;
mod policy;
pub mod providers;
pub mod reader;
mod row;
mod shards;

pub use info::{BuildInfo, Counts, FileHash, ModelInfo};
pub use policy::{reason, LengthPolicy, OverLength, Policies, Verdict};
pub use providers::{ConventionReport, ProviderReport, Providers};
pub use reader::{BuildDir, FileError, TokenColumns, TokenRow};
pub use row::{read_request, row_of, BuiltRow, ReadRecord, Row, RowMeta};
pub use shards::{record_batch, schema, ShardInfo, ShardLimits};

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::api::ServerKind;
use crate::journal::{Record, RunDir, Status, JOURNAL_DIR, MANIFEST_FILE};
use crate::model::Profile;
use crate::reconstruct::ReconstructOptions;

/// File names in the output directory.
pub const BUILD_JSON: &str = "build.json";
pub const SAMPLES_JSONL: &str = "samples.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: not a run directory (no journal/ and no manifest.json)")]
    NotARun(String),
    #[error("{path}:{line}: {message}")]
    BadInput {
        path: String,
        line: usize,
        message: String,
    },
    #[error("writing Parquet: {0}")]
    Parquet(String),
    #[error("the sample writer stopped: {0}")]
    Writer(String),
}

impl BuildError {
    pub fn io(path: &Path, source: std::io::Error) -> BuildError {
        BuildError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// How the run's server shaped its text, as the run's `manifest.json` records it
/// ([`ReconstructOptions::for_run`]: a manifest written before servers were
/// recorded builds as a generic server).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The server kind of the run's first endpoint.
    #[serde(default)]
    pub server_kind: ServerKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The server puts a space on each side of special tokens (vLLM's
    /// `spaces_between_special_tokens`), as recorded, or the `--spaces-around-special-tokens` flag.
    #[serde(default)]
    pub spaces_around_special_tokens: bool,
    /// The run's endpoints shape text differently: each single-turn record is rebuilt under its
    /// own endpoint's shape ([`Providers`]); multi-turn conversations use the first's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed_server_shapes: bool,
}

impl RunSettings {
    /// Read what the manifest says; a missing manifest gives the defaults.
    pub fn from_run(run: &Path) -> Result<RunSettings, BuildError> {
        let Some(manifest) = read_manifest(run)? else {
            return Ok(RunSettings::default());
        };
        let options = ReconstructOptions::for_run(&manifest);
        Ok(RunSettings {
            server_kind: options.kind,
            server_version: options.server_version,
            spaces_around_special_tokens: options.spaces_around_special_tokens,
            mixed_server_shapes: ReconstructOptions::mixed_in_run(&manifest),
        })
    }

    pub fn reconstruct_options(&self) -> ReconstructOptions {
        ReconstructOptions {
            spaces_around_special_tokens: self.spaces_around_special_tokens,
            kind: self.server_kind,
            server_version: self.server_version.clone(),
            ..ReconstructOptions::default()
        }
    }
}

/// The run's `manifest.json`, if it has one.
fn read_manifest(run: &Path) -> Result<Option<crate::journal::Manifest>, BuildError> {
    RunDir::new(run)
        .read_manifest()
        .map_err(|e| BuildError::BadInput {
            path: run.join(MANIFEST_FILE).display().to_string(),
            line: 0,
            message: e.to_string(),
        })
}

/// Everything one build needs.
pub struct BuildConfig<'a> {
    pub profile: &'a Profile,
    /// The resolved model directory and the `--model` argument, for `build.json`.
    pub model_dir: &'a Path,
    pub model_name: &'a str,
    pub run: &'a Path,
    pub out: &'a Path,
    pub policies: Policies,
    /// Force spaces-around-special-tokens on (the manifest may say so already).
    pub spaces_around_special_tokens: bool,
    /// `prompts.jsonl` to take each sample's `source` from.
    pub prompts: Option<&'a Path>,
    pub jsonl: bool,
    /// Journal lines per batch.
    pub batch: usize,
    pub limits: ShardLimits,
}

/// What a build did: the counts written to `build.json`, plus the first problems in detail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildSummary {
    pub out: PathBuf,
    pub counts: Counts,
    pub shards: Vec<ShardInfo>,
    /// Records that could not be built and unreadable journal lines, `FILE:LINE (id …): why`
    /// (the first 100; `counts.dropped_by_reason` has them all).
    pub problems: Vec<String>,
    /// Journal lines that were neither built nor a policy drop (see `problems`).
    pub failures: u64,
    /// Each provider group: the conventions inferred from its answers and what became of its rows.
    #[serde(default)]
    pub providers: Vec<ProviderReport>,
    /// Whether the run read was finished (every prompt answered, no writer): `None` when it
    /// could not be told (journal unreadable).
    #[serde(default)]
    pub completeness: Option<crate::journal::Completeness>,
}

impl BuildSummary {
    /// No record failed to build and no journal line was unreadable.
    pub fn all_ok(&self) -> bool {
        self.failures == 0
    }
}

const MAX_PROBLEMS: usize = 100;

/// What one journal line became.
enum Outcome {
    /// Not a success (failed or skipped attempt): nothing to build.
    NotSuccess,
    Corrupt(String),
    Failed(String),
    /// A row, and its provider group (index in [`Providers`]).
    Built(BuiltRow, Option<usize>),
    /// One turn of a multi-turn conversation, waiting for its conversation's other turns.
    Turn(Box<conversation::TurnRecord>),
}

/// Build the samples of a run.
pub fn build(config: &BuildConfig) -> Result<BuildSummary, BuildError> {
    let journal_dir = config.run.join(JOURNAL_DIR);
    if !journal_dir.is_dir() && !config.run.join(MANIFEST_FILE).is_file() {
        return Err(BuildError::NotARun(config.run.display().to_string()));
    }
    // The completeness check reads the whole journal once more (the resume index): on its own
    // thread, beside the provider scan and the build, rather than before them.
    let completeness = PendingCompleteness::spawn(config.run);
    let mut settings = RunSettings::from_run(config.run)?;
    settings.spaces_around_special_tokens |= config.spaces_around_special_tokens;
    let manifest = read_manifest(config.run)?;
    let mut providers = Providers::new(manifest.as_ref(), config.spaces_around_special_tokens);
    if journal_dir.is_dir() {
        providers.learn(config.profile, &journal_dir, config.batch)?;
    }
    let sources = match config.prompts {
        Some(path) => read_sources(path)?,
        None => HashMap::new(),
    };
    std::fs::create_dir_all(config.out).map_err(|e| BuildError::io(config.out, e))?;
    let model = ModelInfo::of(config.profile, config.model_dir, config.model_name)
        .map_err(|e| BuildError::io(config.model_dir, e))?;

    let mut lines =
        lines::JournalLines::open(&journal_dir).map_err(|e| BuildError::io(&journal_dir, e))?;
    let (to_writer, from_builder) = mpsc::sync_channel::<Vec<Row>>(2);
    let writer = spawn_writer(config.out, config.limits, config.jsonl, from_builder)?;

    let mut progress = Progress {
        summary: BuildSummary {
            out: config.out.to_path_buf(),
            ..BuildSummary::default()
        },
        seen: HashSet::new(),
        pending: conversation::Pending::default(),
        per_group: vec![providers::GroupCounts::default(); providers.groups().len()],
    };
    let inputs = BatchInputs {
        config,
        providers: &providers,
        sources: &sources,
    };
    let segments = lines.segment_paths().to_vec();
    let result = (|| -> Result<(), BuildError> {
        let mut batch = lines.next_batch(config.batch.max(1));
        loop {
            let current = batch.map_err(|e| BuildError::io(&journal_dir, e))?;
            if current.is_empty() {
                break;
            }
            // The next batch is read while this one is built: reading is one thread's work.
            let rows;
            (batch, rows) = rayon::join(
                || lines.next_batch(config.batch.max(1)),
                || progress.batch(&inputs, &segments, current),
            );
            if !rows.is_empty() && to_writer.send(rows).is_err() {
                break;
            }
        }
        progress.note_incomplete();
        Ok(())
    })();
    drop(to_writer);
    let written = writer
        .join()
        .map_err(|_| BuildError::Writer("the writer thread panicked".into()))?;
    result?;
    let (shards, jsonl) = written?;
    let mut summary = progress.summary;
    summary.completeness = completeness.join();
    summary.shards = shards;
    summary.providers = providers.report(&progress.per_group);
    write_build_json(config, settings, model, &summary, jsonl)?;
    Ok(summary)
}

/// [`Completeness::of`](crate::journal::Completeness::of) the run, computed on its own thread;
/// joined when taken or dropped, so an early return does not leave it running.
struct PendingCompleteness {
    thread: Option<std::thread::JoinHandle<Option<crate::journal::Completeness>>>,
    /// Computed on the caller's thread where no thread could be started.
    done: Option<crate::journal::Completeness>,
}

impl PendingCompleteness {
    fn spawn(run: &Path) -> PendingCompleteness {
        let owned = run.to_path_buf();
        match std::thread::Builder::new()
            .name("build-completeness".into())
            .spawn(move || crate::journal::Completeness::of(&owned))
        {
            Ok(thread) => PendingCompleteness {
                thread: Some(thread),
                done: None,
            },
            Err(_) => PendingCompleteness {
                thread: None,
                done: crate::journal::Completeness::of(run),
            },
        }
    }

    fn join(mut self) -> Option<crate::journal::Completeness> {
        match self.thread.take() {
            Some(thread) => match thread.join() {
                Ok(completeness) => completeness,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            None => self.done.take(),
        }
    }
}

impl Drop for PendingCompleteness {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What every batch is built with.
struct BatchInputs<'a> {
    config: &'a BuildConfig<'a>,
    /// Each record's shape and conventions (every turn's too), by its endpoint and provider.
    providers: &'a Providers,
    sources: &'a HashMap<String, String>,
}

/// What a build holds across batches.
struct Progress {
    summary: BuildSummary,
    /// One hash per written sample id (to drop duplicate successes).
    seen: HashSet<u64>,
    /// Turns of conversations whose last turn has not been read yet.
    pending: conversation::Pending,
    /// What became of each provider group's rows (by [`Providers`] group index).
    per_group: Vec<providers::GroupCounts>,
}

impl Progress {
    /// One batch of journal lines → the rows to write (policies applied), in journal order.
    fn batch(
        &mut self,
        inputs: &BatchInputs,
        segments: &[PathBuf],
        batch: Vec<lines::RawLine>,
    ) -> Vec<Row> {
        let BatchInputs {
            config,
            providers,
            sources,
        } = *inputs;
        let outcomes: Vec<(String, Outcome)> = batch
            .par_iter()
            .map(|raw| {
                let location = format!("{}:{}", segments[raw.segment].display(), raw.line);
                let outcome = outcome_of(config.profile, providers, sources, &raw.bytes, &location);
                (location, outcome)
            })
            .collect();
        drop(batch);
        let mut built: Vec<(BuiltRow, Option<usize>)> = Vec::with_capacity(outcomes.len());
        for (location, outcome) in outcomes {
            self.tally(location, outcome, &mut built);
        }
        // Conversations whose turns are all in: one row each, on all cores.
        let complete = self.pending.take_complete();
        let conversations: Vec<(Result<BuiltRow, String>, Option<usize>)> = complete
            .into_par_iter()
            .map(|turns| {
                // The conversation's row is counted with its last turn's provider group.
                let group = turns.last().and_then(|t| providers.group(&t.record));
                (
                    conversation::row_under(config.profile, providers, sources, turns),
                    group,
                )
            })
            .collect();
        for (result, group) in conversations {
            match result {
                Ok(row) => built.push((row, group)),
                Err(reason) => self.not_built(reason),
            }
        }
        keep(
            config,
            &mut self.summary,
            &mut self.seen,
            &mut self.per_group,
            built,
        )
    }

    /// Count what one journal line became; a built row goes to `built`, a turn waits.
    fn tally(
        &mut self,
        location: String,
        outcome: Outcome,
        built: &mut Vec<(BuiltRow, Option<usize>)>,
    ) {
        let summary = &mut self.summary;
        match outcome {
            Outcome::NotSuccess => {}
            // A line no reader can parse is skipped, counted and named, never a failed build:
            // one bad line must not stop the build of a run of millions.
            Outcome::Corrupt(reason) => {
                summary.counts.drop(reason::CORRUPT_LINE);
                note(
                    summary,
                    format!("{location}: skipped, unreadable: {reason}"),
                );
            }
            Outcome::Failed(reason) => {
                summary.counts.records += 1;
                self.not_built(reason);
            }
            Outcome::Built(row, group) => {
                summary.counts.records += 1;
                built.push((row, group));
            }
            Outcome::Turn(turn) => {
                summary.counts.records += 1;
                self.pending.add(*turn);
            }
        }
    }

    fn not_built(&mut self, reason: String) {
        self.summary.failures += 1;
        self.summary.counts.drop(reason::NOT_BUILT);
        note(&mut self.summary, reason);
    }

    /// Conversations still missing turns at the end of the journal: no sample, each noted.
    fn note_incomplete(&mut self) {
        for incomplete in self.pending.incomplete() {
            self.summary.counts.drop(reason::INCOMPLETE_CONVERSATION);
            note(
                &mut self.summary,
                format!("conversation {incomplete}: not every turn succeeded yet; no sample (resume the run to finish it)"),
            );
        }
    }
}

/// `build.json`: the run's settings, the model, the policies, the counts and the files written.
fn write_build_json(
    config: &BuildConfig,
    settings: RunSettings,
    model: ModelInfo,
    summary: &BuildSummary,
    jsonl: Option<FileHash>,
) -> Result<(), BuildError> {
    let info = BuildInfo {
        draftgen_version: env!("CARGO_PKG_VERSION").to_string(),
        created: chrono::Utc::now().to_rfc3339(),
        // Absolute, so that `verify` finds the run from any working directory.
        run: std::fs::canonicalize(config.run)
            .unwrap_or_else(|_| config.run.to_path_buf())
            .display()
            .to_string(),
        run_settings: settings,
        model,
        policies: config.policies.clone(),
        counts: summary.counts.clone(),
        providers: summary.providers.clone(),
        shards: summary.shards.clone(),
        jsonl,
        completeness: summary.completeness.clone(),
    };
    let path = config.out.join(BUILD_JSON);
    let mut text =
        serde_json::to_vec_pretty(&info).map_err(|e| BuildError::Writer(e.to_string()))?;
    text.push(b'\n');
    crate::journal::atomic_write(&path, &text).map_err(|e| BuildError::Writer(e.to_string()))
}

fn note(summary: &mut BuildSummary, problem: String) {
    if summary.problems.len() < MAX_PROBLEMS {
        summary.problems.push(problem);
    }
}

/// Parse one journal line and build what it holds.
fn outcome_of(
    profile: &Profile,
    providers: &Providers,
    sources: &HashMap<String, String>,
    bytes: &[u8],
    location: &str,
) -> Outcome {
    // The readers' parse, with the limits `generate` admitted the answer under.
    let record = match crate::api::json_limits::parse_line::<Record>(bytes) {
        Ok(record) => record,
        Err(e) => return Outcome::Corrupt(e.to_string()),
    };
    if record.status != Status::Success {
        return Outcome::NotSuccess;
    }
    let record = match conversation::TurnRecord::of(record, location) {
        Ok(turn) => return Outcome::Turn(Box::new(turn)),
        Err(record) => *record,
    };
    // `--prompts` first (as before), else the source the record carries.
    let source = sources
        .get(&record.id)
        .cloned()
        .or_else(|| record.source.clone());
    let group = providers.group(&record);
    let (options, conventions) = providers.rebuild_with(group, &record.endpoint);
    let row = ReadRecord::of(&record)
        .and_then(|read| read.row_under(profile, options, conventions, source));
    match row {
        Ok(row) => Outcome::Built(row, group),
        Err(e) => Outcome::Failed(format!("{location} (id {}): {e}", record.id)),
    }
}

/// Apply the policies and drop duplicate successes; count what is kept.
fn keep(
    config: &BuildConfig,
    summary: &mut BuildSummary,
    seen: &mut HashSet<u64>,
    per_group: &mut [providers::GroupCounts],
    built: Vec<(BuiltRow, Option<usize>)>,
) -> Vec<Row> {
    let counts = &mut summary.counts;
    let mut rows = Vec::with_capacity(built.len());
    for (
        BuiltRow {
            mut row,
            server_ids,
        },
        group,
    ) in built
    {
        let mut group = group.and_then(|g| per_group.get_mut(g));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        row.id.hash(&mut hasher);
        if !seen.insert(hasher.finish()) {
            counts.drop("duplicate_success");
            continue;
        }
        match config.policies.apply(&mut row) {
            Verdict::Drop(reason) => {
                counts.drop(&reason);
                if let Some(g) = group.as_mut() {
                    g.dropped += 1;
                }
                continue;
            }
            Verdict::Cut => counts.cut += 1,
            Verdict::Keep => {}
        }
        counts.samples += 1;
        if let Some(g) = group {
            g.samples += 1;
            *g.per_fidelity_class
                .entry(row.fidelity_class.name().to_string())
                .or_default() += 1;
        }
        *counts
            .per_fidelity_class
            .entry(row.fidelity_class.name().to_string())
            .or_default() += 1;
        if server_ids {
            counts.with_server_ids += 1;
        } else {
            counts.rebuilt_from_text += 1;
        }
        if row.turns > 1 {
            counts.multi_turn += 1;
        }
        counts.prompt_tokens += u64::from(row.prompt_len);
        counts.completion_tokens += u64::from(row.completion_len);
        rows.push(row);
    }
    rows
}

type Written = Result<(Vec<ShardInfo>, Option<FileHash>), BuildError>;

/// The writer thread: Parquet shards and the optional JSONL, in the order rows arrive.
fn spawn_writer(
    out: &Path,
    limits: ShardLimits,
    jsonl: bool,
    rows: mpsc::Receiver<Vec<Row>>,
) -> Result<std::thread::JoinHandle<Written>, BuildError> {
    let out = out.to_path_buf();
    std::thread::Builder::new()
        .name("build-writer".into())
        .spawn(move || {
            let mut shards = shards::ShardWriter::new(&out, limits);
            let jsonl_path = out.join(SAMPLES_JSONL);
            let jsonl_partial = out.join(format!("{SAMPLES_JSONL}.partial"));
            let mut jsonl_writer = if jsonl {
                let file =
                    File::create(&jsonl_partial).map_err(|e| BuildError::io(&jsonl_partial, e))?;
                Some(BufWriter::with_capacity(1 << 20, file))
            } else {
                None
            };
            for batch in rows {
                shards.write(&batch)?;
                if let Some(w) = jsonl_writer.as_mut() {
                    for row in &batch {
                        serde_json::to_writer(&mut *w, row)
                            .map_err(|e| BuildError::Writer(e.to_string()))?;
                        w.write_all(b"\n")
                            .map_err(|e| BuildError::io(&jsonl_partial, e))?;
                    }
                }
            }
            let shards = shards.finish()?;
            let jsonl = match jsonl_writer {
                Some(mut w) => {
                    w.flush().map_err(|e| BuildError::io(&jsonl_partial, e))?;
                    drop(w);
                    std::fs::rename(&jsonl_partial, &jsonl_path)
                        .map_err(|e| BuildError::io(&jsonl_path, e))?;
                    Some(FileHash {
                        file: SAMPLES_JSONL.to_string(),
                        sha256: info::sha256_file(&jsonl_path)
                            .map_err(|e| BuildError::io(&jsonl_path, e))?,
                    })
                }
                None => None,
            };
            Ok((shards, jsonl))
        })
        .map_err(|e| BuildError::Writer(e.to_string()))
}

/// `prompts.jsonl` → prompt id → source.
pub fn read_sources(path: &Path) -> Result<HashMap<String, String>, BuildError> {
    #[derive(Deserialize)]
    struct Line {
        id: String,
        #[serde(default)]
        source: Option<String>,
    }
    let mut sources = HashMap::new();
    for_each_prompt_line(path, "a prompt line with an `id`", |line: Line| {
        if let Some(source) = line.source {
            sources.insert(line.id, source);
        }
    })?;
    Ok(sources)
}

/// Every non-blank line of the prompts file `path` as a `T`, in file order; a line that is not
/// one stops the read with `BadInput` saying what was `expected`.
pub(crate) fn for_each_prompt_line<T: DeserializeOwned>(
    path: &Path,
    expected: &str,
    mut f: impl FnMut(T),
) -> Result<(), BuildError> {
    let file = File::open(path).map_err(|e| BuildError::io(path, e))?;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| BuildError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: T = serde_json::from_str(&line).map_err(|e| BuildError::BadInput {
            path: path.display().to_string(),
            line: index + 1,
            message: format!("{e} (expected {expected})"),
        })?;
        f(parsed);
    }
    Ok(())
}
