//! speculators (vllm-project/speculators @c05b95b) training data.
//!
//! * `speculators.jsonl`: `{"id", "input_ids", "loss_mask"}` rows. `scripts/prepare_data.py`
//!   sees both columns and passes them through unchanged (`data_generation/preprocessing.py::
//!   _passthrough_pretokenized`, no render endpoint needed).
//! * `prepared/`: what `prepare_data.py` itself writes from those rows — the `save_to_disk`
//!   dataset `{input_ids, loss_mask, seq_len}` (int64, `torch` format) and `token_freq.pt`
//!   (`torch.save(dict[int, int])` of loss-masked counts, `train/vocab_mapping.py::
//!   save_token_frequency_distribution`). It is the `--data-path` of `scripts/train.py`.
//!   With `max_length`, rows are clipped and rows left without a supervised token dropped, as
//!   `_append_row` does. prepare_data.py also shuffles (seed 0); draftgen keeps build order.

use std::io::Write;
use std::path::Path;

use super::hf_arrow::DatasetWriter;
use super::vocab::TokenCounts;
use super::{torch_pickle, ExportError};
use crate::build::BuildDir;

/// What [`export`] wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    pub rows_in: u64,
    pub rows_written: u64,
    /// Rows with no loss-masked token inside `max_length` (speculators drops them).
    pub dropped_unsupervised: u64,
    /// Rows cut at `max_length`.
    pub clipped: u64,
    pub loss_tokens: u64,
}

pub fn export(
    build: &BuildDir,
    out: &Path,
    max_length: Option<usize>,
) -> Result<Summary, ExportError> {
    std::fs::create_dir_all(out).map_err(|e| ExportError::io(out, e))?;
    let jsonl_path = out.join("speculators.jsonl");
    let file = std::fs::File::create(&jsonl_path).map_err(|e| ExportError::io(&jsonl_path, e))?;
    let mut jsonl = std::io::BufWriter::new(file);
    let prepared = out.join("prepared");
    let mut dataset = DatasetWriter::create(&prepared)?;
    let mut counts = TokenCounts::default();
    let mut summary = Summary::default();
    build.for_each::<_, ExportError>(|row| {
        summary.rows_in += 1;
        super::specforge::write_token_line(&mut jsonl, Some(row.id), row.input_ids, row.loss_mask)
            .map_err(|e| ExportError::io(&jsonl_path, e))?;
        let keep = max_length.unwrap_or(usize::MAX).min(row.input_ids.len());
        let (ids, mask) = (&row.input_ids[..keep], &row.loss_mask[..keep]);
        if !mask.contains(&1) {
            summary.dropped_unsupervised += 1;
            return Ok(());
        }
        summary.clipped += (keep < row.input_ids.len()) as u64;
        dataset.push(ids, mask)?;
        counts.add(ids, mask);
        Ok(())
    })?;
    jsonl.flush().map_err(|e| ExportError::io(&jsonl_path, e))?;
    summary.rows_written = dataset.finish()?;
    summary.loss_tokens = counts.total;
    torch_pickle::save_int_dict(&prepared.join("token_freq.pt"), &counts.frequencies())?;
    Ok(summary)
}
