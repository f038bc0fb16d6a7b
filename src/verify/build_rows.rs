//! Verify on a `build` directory: its rows already carry ids, fidelity class, source and
//! provider (the columns of docs/FORMATS.md). Shards are streamed one record batch at
//! a time; with `--reference` each row's completion (its masked tokens) is compared.
//!
//! The rows carry no `usage`: the server's `prompt_tokens` / `completion_tokens` are read from
//! the run directory `build.json` names ([`run_usage`]), matched by sample id (a single-turn
//! row's id is its record's id; the first success counts, as in `build`). A multi-turn row (a
//! conversation, id = its prompt id) has no one record, so no usage: the run's own verify
//! checks each turn's.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StringArray};

use super::VerifyError;
use crate::build::{BuildDir, FileError, ProviderReport, TokenColumns};
use crate::journal::{RecordReader, Status, JOURNAL_DIR};
use crate::reconstruct::{FidelityClass, Reason};

const BATCH_ROWS: usize = 512;

/// One row of a build, as verify needs it.
pub struct BuildRow {
    pub id: String,
    pub source: Option<String>,
    pub provider: Option<String>,
    pub fidelity: FidelityClass,
    /// `fidelity_reasons`, the names `build` wrote (unknown names are skipped).
    pub reasons: Vec<Reason>,
    pub has_tool_calls: bool,
    pub prompt_len: usize,
    /// The model-produced tokens (`loss_mask == 1`), in order.
    pub completion: Vec<u32>,
}

/// The server's `usage` of one sample: `prompt_tokens`, `completion_tokens`.
pub type Usage = (Option<u64>, Option<u64>);

/// The run a build was made from (`build.json` `run`), if it is still there.
pub fn run_of(build_dir: &Path) -> Result<std::path::PathBuf, String> {
    let build = BuildDir::open(build_dir).map_err(|e| e.to_string())?;
    let run = build.build_json["run"]
        .as_str()
        .ok_or("build.json names no run directory")?;
    let run = std::path::PathBuf::from(run);
    if run.join(JOURNAL_DIR).is_dir() {
        Ok(run)
    } else {
        Err(format!(
            "{}: the run build.json names has no journal here",
            run.display()
        ))
    }
}

/// Every successful record's usage in the run's journal, by record id (first success kept).
/// Unreadable lines are skipped: the run's own verify reports them.
pub fn run_usage(run: &Path) -> Result<HashMap<String, Usage>, String> {
    let journal = run.join(JOURNAL_DIR);
    let reader = RecordReader::open(&journal).map_err(|e| e.to_string())?;
    let mut usage = HashMap::new();
    for item in reader {
        let (_, record) = item.map_err(|e| e.to_string())?;
        let Ok(record) = record else { continue };
        if record.status != Status::Success {
            continue;
        }
        // Old journals carry the counts only in the response.
        let from_response = |field: &str| {
            record
                .response
                .as_ref()
                .and_then(|r| r.get("usage"))
                .and_then(|u| u.get(field))
                .and_then(serde_json::Value::as_u64)
        };
        let counts = (
            record
                .prompt_tokens
                .or_else(|| from_response("prompt_tokens")),
            record
                .completion_tokens
                .or_else(|| from_response("completion_tokens")),
        );
        usage.entry(record.id).or_insert(counts);
    }
    Ok(usage)
}

/// The provider groups `build.json` lists (empty when it lists none or cannot be read: the
/// table then has no conventions, and verdicts come from the rows alone).
pub fn provider_groups(build_dir: &Path) -> Vec<ProviderReport> {
    BuildDir::open(build_dir)
        .ok()
        .and_then(|b| serde_json::from_value(b.build_json["providers"].clone()).ok())
        .unwrap_or_default()
}

/// Whether `dir` is a build output directory (has `build.json` or Parquet shards, no journal).
pub fn is_build_dir(dir: &Path) -> bool {
    !dir.join(crate::journal::JOURNAL_DIR).is_dir() && BuildDir::open(dir).is_ok()
}

/// Call `f` with every batch of rows, in shard order then row order.
pub fn for_each_batch(
    dir: &Path,
    mut f: impl FnMut(Vec<BuildRow>) -> Result<(), VerifyError>,
) -> Result<(), VerifyError> {
    let build = BuildDir::open(dir).map_err(|e| VerifyError::Input(e.to_string()))?;
    build.for_each_batch(None, BATCH_ROWS, |shard, first_row, batch| {
        f(rows_of(shard, first_row, batch)?)
    })
}

/// The rows of `batch`, which starts at row `first_row` of the shard at `shard`.
fn rows_of(shard: &Path, first_row: u64, batch: &RecordBatch) -> Result<Vec<BuildRow>, FileError> {
    let tokens = TokenColumns::of(shard, first_row, batch)?;
    let strings = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| FileError::format(shard, format!("no `{name}` column")))?
            .as_string_opt::<i32>()
            .ok_or_else(|| FileError::format(shard, format!("`{name}` is not Utf8")))
    };
    let sources = strings("source")?;
    let providers = strings("provider")?;
    let classes = strings("fidelity_class")?;
    let reasons = batch
        .column_by_name("fidelity_reasons")
        .and_then(|c| c.as_list_opt::<i32>());
    let tool_calls = batch
        .column_by_name("has_tool_calls")
        .and_then(|c| c.as_boolean_opt());
    let opt = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let row = tokens.row(i)?;
        let class_name = classes.value(i);
        let fidelity = FidelityClass::ALL
            .into_iter()
            .find(|c| c.name() == class_name)
            .ok_or_else(|| {
                FileError::format(
                    shard,
                    format!("{}: unknown fidelity class {class_name:?}", tokens.at(i)),
                )
            })?;
        rows.push(BuildRow {
            id: row.id.to_string(),
            source: opt(sources, i),
            provider: opt(providers, i),
            fidelity,
            reasons: reasons.map(|r| reasons_of(r, i)).unwrap_or_default(),
            has_tool_calls: tool_calls.is_some_and(|t| !t.is_null(i) && t.value(i)),
            prompt_len: row
                .loss_mask
                .iter()
                .position(|&m| m == 1)
                .unwrap_or(row.loss_mask.len()),
            completion: row
                .input_ids
                .iter()
                .zip(row.loss_mask)
                .filter(|(_, &m)| m == 1)
                .map(|(&id, _)| id)
                .collect(),
        });
    }
    Ok(rows)
}

/// The reasons of row `i` of a `fidelity_reasons` list column.
fn reasons_of(column: &arrow_array::ListArray, i: usize) -> Vec<Reason> {
    if column.is_null(i) {
        return Vec::new();
    }
    let values = column.value(i);
    let Some(names) = values.as_string_opt::<i32>() else {
        return Vec::new();
    };
    (0..names.len())
        .filter(|&j| !names.is_null(j))
        .filter_map(|j| Reason::named(names.value(j)))
        .collect()
}
