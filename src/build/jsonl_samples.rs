//! [`Sample`]s from a run as JSON lines: every successful record of the journal reconstructed into
//! the token ids a trainer consumes, in journal order, on all cores (what `draftgen demo` writes;
//! `build` proper writes Parquet shards). It lives in `build` rather than `reconstruct` because it
//! reads the journal, and `reconstruct` sits below `journal` in the module graph.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::row::read_request;
use crate::journal::{JournalError, Record, RecordReader, Status};
use crate::model::Profile;
use crate::reconstruct::{reconstruct, Fidelity, FidelityClass, ReconstructOptions};

/// One training sample: the prompt and the model's answer as exact ids, and a loss mask over
/// `prompt_ids ++ completion_ids` (0 on the prompt, 1 on the answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub id: String,
    pub prompt_ids: Vec<u32>,
    pub completion_ids: Vec<u32>,
    pub loss_mask: Vec<u8>,
    pub warnings: Vec<String>,
    pub fidelity: Fidelity,
}

impl Sample {
    fn new(
        id: String,
        prompt_ids: Vec<u32>,
        completion_ids: Vec<u32>,
        warnings: Vec<String>,
        fidelity: Fidelity,
    ) -> Self {
        let mut loss_mask = vec![0u8; prompt_ids.len()];
        loss_mask.resize(prompt_ids.len() + completion_ids.len(), 1);
        Sample {
            id,
            prompt_ids,
            completion_ids,
            loss_mask,
            warnings,
            fidelity,
        }
    }
}

/// What a build did, so every successful record is accounted for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildReport {
    /// Successful records read from the journal.
    pub records: u64,
    pub samples: u64,
    pub with_warnings: u64,
    pub ambiguous: u64,
    /// Samples per fidelity class (`unique`, `lossy`, …), every class listed.
    #[serde(default)]
    pub classes: std::collections::BTreeMap<String, u64>,
    /// Records that could not be reconstructed, with the reason (journal location and id).
    pub failed: Vec<String>,
    /// Journal lines that could not be read.
    pub corrupt_lines: Vec<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Reconstruct every successful record under `journal_dir` and write one [`Sample`] per line to
/// `out` (written under a temporary name and renamed when complete).
pub fn build_samples(
    profile: &Profile,
    journal_dir: &Path,
    options: &ReconstructOptions,
    out: &Path,
) -> Result<BuildReport, BuildError> {
    const BATCH: usize = 2048;
    let tmp = out.with_extension("partial");
    let write_err = |source| BuildError::Write {
        path: tmp.display().to_string(),
        source,
    };
    let mut writer = BufWriter::new(File::create(&tmp).map_err(write_err)?);
    let mut report = BuildReport::default();
    for class in FidelityClass::ALL {
        report.classes.insert(class.name().to_string(), 0);
    }
    let mut batch: Vec<(String, Record)> = Vec::with_capacity(BATCH);

    for item in RecordReader::open(journal_dir)? {
        let (location, record) = item?;
        match record {
            Ok(record) if record.status == Status::Success => {
                batch.push((location.to_string(), record));
            }
            Ok(_) => {}
            Err(corrupt) => report
                .corrupt_lines
                .push(format!("{}: {}", corrupt.location, corrupt.reason)),
        }
        if batch.len() == BATCH {
            write_batch(profile, options, &mut batch, &mut writer, &mut report)
                .map_err(write_err)?;
        }
    }
    write_batch(profile, options, &mut batch, &mut writer, &mut report).map_err(write_err)?;
    writer.flush().map_err(write_err)?;
    drop(writer);
    std::fs::rename(&tmp, out).map_err(|source| BuildError::Write {
        path: out.display().to_string(),
        source,
    })?;
    Ok(report)
}

fn write_batch(
    profile: &Profile,
    options: &ReconstructOptions,
    batch: &mut Vec<(String, Record)>,
    writer: &mut impl Write,
    report: &mut BuildReport,
) -> std::io::Result<()> {
    let results: Vec<_> = batch
        .par_iter()
        .map(|(location, record)| {
            sample_of(profile, options, record)
                .map_err(|e| format!("{location} (id {}): {e}", record.id))
        })
        .collect();
    report.records += batch.len() as u64;
    batch.clear();
    for result in results {
        match result {
            Ok((sample, ambiguous)) => {
                report.samples += 1;
                report.ambiguous += u64::from(ambiguous);
                *report
                    .classes
                    .entry(sample.fidelity.class.name().to_string())
                    .or_default() += 1;
                report.with_warnings += u64::from(!sample.warnings.is_empty());
                report.prompt_tokens += sample.prompt_ids.len() as u64;
                report.completion_tokens += sample.completion_ids.len() as u64;
                serde_json::to_writer(&mut *writer, &sample)?;
                writer.write_all(b"\n")?;
            }
            Err(reason) => report.failed.push(reason),
        }
    }
    Ok(())
}

/// One record → one sample (its reconstruction's warnings kept), and whether it was ambiguous.
fn sample_of(
    profile: &Profile,
    options: &ReconstructOptions,
    record: &Record,
) -> Result<(Sample, bool), String> {
    let request = read_request(&record.request)?;
    let response = record.response.as_ref().ok_or("no response body")?;
    let r = reconstruct(profile, &request, response, options).map_err(|e| e.to_string())?;
    let sample = Sample::new(
        record.id.clone(),
        r.prompt_ids,
        r.completion_ids,
        r.warnings,
        r.fidelity,
    );
    Ok((sample, r.ambiguous))
}
