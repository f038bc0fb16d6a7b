//! The `prepare` stage: dataset files → prompts, with every record accounted for (a prompt, a
//! duplicate, skipped with a reason, malformed with its location, outside the shard, or past
//! a limit), and `prompts.jsonl` written atomically.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use super::error::{DatasetError, Malformed};
use super::format::{Format, RecordError};
use super::prompt::Prompt;
use super::reader::{self, json_kind, RawRecord, DEFAULT_MAX_LINE_BYTES};

/// How many problems per source the report keeps word for word (all are counted).
const ISSUES_KEPT: usize = 50;

/// `--shard I/N`: keep the prompts whose id falls in shard `index` (0-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--shard wants I/N with 0 <= I < N (e.g. 0/4), got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// What `prepare` does; `Default` reads everything with auto-detection into `prompts.jsonl`.
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    /// Force one adapter for every record instead of detecting it per record.
    pub format: Option<Format>,
    pub out: PathBuf,
    /// Fail on the first malformed record instead of skipping it.
    pub strict: bool,
    pub shard: Option<Shard>,
    /// Stop reading a file once it has given this many prompts.
    pub limit_per_source: Option<u64>,
    /// Stop once this many prompts are written in total.
    pub limit: Option<u64>,
    /// Longest JSONL line read; longer ones are malformed.
    pub max_line_bytes: usize,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        Self {
            format: None,
            out: PathBuf::from("prompts.jsonl"),
            strict: false,
            shard: None,
            limit_per_source: None,
            limit: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// What happened to one input file's records.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SourceReport {
    /// The file name; also the prompts' `source`.
    pub source: String,
    pub path: String,
    /// Records seen, whatever became of them.
    pub read: u64,
    pub prompts: u64,
    pub duplicates: u64,
    pub malformed: u64,
    /// Records without anything to ask, by reason.
    pub skipped: BTreeMap<String, u64>,
    pub out_of_shard: u64,
    /// Reading stopped early because a limit was reached.
    pub limited: bool,
    /// Records kept despite a problem (a truncated call cut off, a dropped tool definition).
    pub warnings: u64,
    /// Adapters used, with how many records each read.
    pub formats: BTreeMap<String, u64>,
    /// The first problems, as `file:line: what is wrong`.
    pub issues: Vec<String>,
}

impl SourceReport {
    fn note(&mut self, issue: String) {
        if self.issues.len() < ISSUES_KEPT {
            self.issues.push(issue);
        }
    }

    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

/// The outcome of a `prepare` run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrepareReport {
    pub out: PathBuf,
    pub sources: Vec<SourceReport>,
}

impl PrepareReport {
    pub fn prompts(&self) -> u64 {
        self.sources.iter().map(|s| s.prompts).sum()
    }

    pub fn malformed(&self) -> u64 {
        self.sources.iter().map(|s| s.malformed).sum()
    }
}

/// Read `inputs` and write their prompts to `opts.out` as JSON Lines, atomically (a temporary
/// file beside it, renamed when complete; nothing is left behind on error).
pub fn prepare(inputs: &[PathBuf], opts: &PrepareOptions) -> Result<PrepareReport, DatasetError> {
    let out = &opts.out;
    let write_err = |source| DatasetError::Write {
        path: out.clone(),
        source,
    };
    let tmp = temp_path(out);
    let file = File::create(&tmp).map_err(write_err)?;
    let mut writer = BufWriter::new(file);
    let result = prepare_into(inputs, opts, &mut |prompt| {
        serde_json::to_writer(&mut writer, prompt)?;
        writer.write_all(b"\n")
    });
    let finish = |report: PrepareReport, writer: BufWriter<File>| -> std::io::Result<_> {
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, out)?;
        Ok(report)
    };
    match result.map(|report| finish(report, writer)) {
        Ok(Ok(mut report)) => {
            report.out = out.clone();
            Ok(report)
        }
        Ok(Err(e)) => {
            let _ = std::fs::remove_file(&tmp);
            Err(write_err(e))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn temp_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "prompts.jsonl".into());
    out.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Read `inputs` and push each kept prompt into `sink`, in input order. The library form of
/// `prepare` for callers that want the prompts in memory or somewhere else.
pub fn prepare_into(
    inputs: &[PathBuf],
    opts: &PrepareOptions,
    sink: &mut dyn FnMut(&Prompt) -> std::io::Result<()>,
) -> Result<PrepareReport, DatasetError> {
    check_shard(opts)?;
    let mut report = PrepareReport {
        out: opts.out.clone(),
        sources: Vec::new(),
    };
    // Ids are unique across all inputs, and `--limit` counts over all of them.
    let mut seen: HashSet<String> = HashSet::new();
    let mut written = 0u64;
    for path in inputs {
        if opts.limit.is_some_and(|limit| written >= limit) {
            break;
        }
        let source = prepare_source(path, opts, &mut seen, &mut written, sink)?;
        report.sources.push(source);
    }
    Ok(report)
}

fn check_shard(opts: &PrepareOptions) -> Result<(), DatasetError> {
    if let Some(shard) = opts.shard {
        if shard.count == 0 || shard.index >= shard.count {
            return Err(DatasetError::Options(format!(
                "shard {}/{} does not exist: I must be below N",
                shard.index, shard.count
            )));
        }
    }
    Ok(())
}

/// Read one input file, pushing its kept prompts into `sink`; what became of its records is
/// the returned report.
fn prepare_source(
    path: &Path,
    opts: &PrepareOptions,
    seen: &mut HashSet<String>,
    written: &mut u64,
    sink: &mut dyn FnMut(&Prompt) -> std::io::Result<()>,
) -> Result<SourceReport, DatasetError> {
    let container = reader::detect_container(path)?;
    let mut source = SourceReport {
        source: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string()),
        path: path.display().to_string(),
        ..Default::default()
    };
    let mut failure: Option<DatasetError> = None;
    reader::read_records(path, container, opts.max_line_bytes, &mut |raw| {
        source.read += 1;
        let step = match to_prompt(raw, opts.format, &mut source) {
            Outcome::Prompt(prompt) => keep_prompt(&prompt, opts, seen, written, &mut source, sink),
            Outcome::Skipped(reason) => {
                *source.skipped.entry(reason.to_string()).or_default() += 1;
                Ok(ControlFlow::Continue(()))
            }
            Outcome::Malformed(malformed) => {
                source.malformed += 1;
                source.note(malformed.to_string());
                if opts.strict {
                    Err(DatasetError::Strict(malformed))
                } else {
                    Ok(ControlFlow::Continue(()))
                }
            }
        };
        step.unwrap_or_else(|e| {
            failure = Some(e);
            ControlFlow::Break(())
        })
    })?;
    match failure {
        Some(failure) => Err(failure),
        None => Ok(source),
    }
}

/// Push `prompt` into `sink` unless it is a duplicate or belongs to another shard; break once
/// a limit is reached.
fn keep_prompt(
    prompt: &Prompt,
    opts: &PrepareOptions,
    seen: &mut HashSet<String>,
    written: &mut u64,
    source: &mut SourceReport,
    sink: &mut dyn FnMut(&Prompt) -> std::io::Result<()>,
) -> Result<ControlFlow<()>, DatasetError> {
    if !seen.insert(prompt.id.clone()) {
        source.duplicates += 1;
    } else if opts.shard.is_some_and(|s| prompt.shard(s.count) != s.index) {
        source.out_of_shard += 1;
    } else {
        sink(prompt).map_err(|e| DatasetError::Write {
            path: opts.out.clone(),
            source: e,
        })?;
        source.prompts += 1;
        *written += 1;
        let source_full = opts.limit_per_source.is_some_and(|l| source.prompts >= l);
        let all_full = opts.limit.is_some_and(|l| *written >= l);
        if source_full || all_full {
            source.limited = true;
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

enum Outcome {
    Prompt(Prompt),
    Skipped(&'static str),
    Malformed(Malformed),
}

/// One raw record through its adapter and the prompt cut.
fn to_prompt(raw: RawRecord, forced: Option<Format>, source: &mut SourceReport) -> Outcome {
    let location = raw.location;
    let bad = |message: String| {
        Outcome::Malformed(Malformed {
            location: location.clone(),
            message,
        })
    };
    let value = match raw.value {
        Ok(value) => value,
        Err(malformed) => return Outcome::Malformed(malformed),
    };
    let Value::Object(record) = value else {
        return bad(format!(
            "record is {}, expected a JSON object",
            json_kind(&value)
        ));
    };
    let Some(format) = forced.or_else(|| Format::detect(&record)) else {
        let keys: Vec<&str> = record.keys().map(String::as_str).collect();
        return bad(format!(
            "unrecognized record shape (keys: {}); pass --format to say which it is",
            keys.join(", ")
        ));
    };
    *source.formats.entry(format.name().to_string()).or_default() += 1;
    let mut conversation = match format.convert(&record) {
        Ok(conversation) => conversation,
        Err(RecordError::Malformed(message)) => return bad(format!("{format}: {message}")),
        Err(RecordError::Skipped(reason)) => return Outcome::Skipped(reason),
    };
    for warning in &conversation.warnings {
        source.warnings += 1;
        source.note(format!("{location}: warning: {warning}"));
    }
    conversation
        .meta
        .insert("format".into(), format.name().into());
    conversation
        .meta
        .insert("record".into(), location.to_string().into());
    match conversation.into_prompt(&source.source) {
        Ok(prompt) => Outcome::Prompt(prompt),
        Err(RecordError::Skipped(reason)) => Outcome::Skipped(reason),
        Err(RecordError::Malformed(message)) => bad(message),
    }
}

/// Load a `prompts.jsonl` written by [`prepare`]; a bad line is an error naming it.
pub fn read_prompts(path: impl AsRef<Path>) -> Result<Vec<Prompt>, DatasetError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut prompts = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line_no = i as u64 + 1;
        let bad = |message: String| DatasetError::PromptsFile {
            path: path.to_path_buf(),
            line: line_no,
            message,
        };
        let line = line.map_err(|e| bad(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let prompt: Prompt = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        prompts.push(prompt);
    }
    Ok(prompts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_parses_and_rejects_nonsense() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
