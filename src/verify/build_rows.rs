//! Verify on a `build` directory: its rows already carry ids, fidelity class, source and
//! provider (the columns of `tasks/FORMAT-samples.md`). Shards are streamed one record batch at
//! a time; with `--reference` each row's completion (its masked tokens) is compared.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::VerifyError;
use crate::export::samples::BuildDir;
use crate::reconstruct::FidelityClass;

const BATCH_ROWS: usize = 512;

/// One row of a build, as verify needs it.
pub struct BuildRow {
    pub id: String,
    pub source: Option<String>,
    pub provider: Option<String>,
    pub fidelity: FidelityClass,
    pub prompt_len: usize,
    /// The model-produced tokens (`loss_mask == 1`), in order.
    pub completion: Vec<u32>,
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
    for shard in &build.shards {
        let bad =
            |e: &dyn std::fmt::Display| VerifyError::Input(format!("{}: {e}", shard.display()));
        let file = File::open(shard).map_err(|e| VerifyError::io(shard, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| bad(&e))?
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| bad(&e))?;
        for batch in reader {
            let batch = batch.map_err(|e| bad(&e))?;
            f(rows_of(&batch).map_err(|e| bad(&e))?)?;
        }
    }
    Ok(())
}

fn rows_of(batch: &RecordBatch) -> Result<Vec<BuildRow>, String> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| format!("no `{name}` column"))
    };
    let strings = |name: &str| {
        column(name)?
            .as_string_opt::<i32>()
            .ok_or_else(|| format!("`{name}` is not Utf8"))
            .cloned()
    };
    let ids = strings("id")?;
    let sources = strings("source")?;
    let providers = strings("provider")?;
    let classes = strings("fidelity_class")?;
    let input_ids = column("input_ids")?
        .as_list_opt::<i32>()
        .ok_or("`input_ids` is not a list")?
        .clone();
    let masks = column("loss_mask")?
        .as_list_opt::<i32>()
        .ok_or("`loss_mask` is not a list")?
        .clone();
    let id_values = input_ids
        .values()
        .as_primitive_opt::<UInt32Type>()
        .ok_or("`input_ids` items are not UInt32")?
        .values()
        .clone();
    let mask_values = masks
        .values()
        .as_primitive_opt::<UInt8Type>()
        .ok_or("`loss_mask` items are not UInt8")?
        .values()
        .clone();
    let opt =
        |a: &arrow_array::StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let (a, b) = (
            input_ids.value_offsets()[i] as usize,
            input_ids.value_offsets()[i + 1] as usize,
        );
        let (ma, mb) = (
            masks.value_offsets()[i] as usize,
            masks.value_offsets()[i + 1] as usize,
        );
        let ids_row = &id_values[a..b];
        let mask_row = &mask_values[ma..mb];
        if ids_row.len() != mask_row.len() {
            return Err(format!("row {i}: input_ids and loss_mask differ in length"));
        }
        let class_name = classes.value(i);
        let fidelity = FidelityClass::ALL
            .into_iter()
            .find(|c| c.name() == class_name)
            .ok_or_else(|| format!("row {i}: unknown fidelity class {class_name:?}"))?;
        rows.push(BuildRow {
            id: ids.value(i).to_string(),
            source: opt(&sources, i),
            provider: opt(&providers, i),
            fidelity,
            prompt_len: mask_row
                .iter()
                .position(|&m| m == 1)
                .unwrap_or(mask_row.len()),
            completion: ids_row
                .iter()
                .zip(mask_row)
                .filter(|(_, &m)| m == 1)
                .map(|(&id, _)| id)
                .collect(),
        });
    }
    Ok(rows)
}
