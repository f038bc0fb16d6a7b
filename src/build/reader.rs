//! Reading a `build` directory (docs/FORMATS.md): `build.json` and the
//! `samples-NNNNN.parquet` shards, streamed one record batch at a time, in file order then row
//! order — the order every export keeps, and the order SpecForge's vocabulary counter sees the
//! rows in. `export` and `verify` both read builds through here.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt8Type};
use arrow_array::{Array, ListArray, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

/// Why a file could not be read or written: a build directory's (here) or an export's. Every
/// variant names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
}

impl FileError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FileError::Io {
            path: path.into(),
            source,
        }
    }
    pub fn format(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        FileError::Format {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Rows per record batch while reading: bounds memory (≈ batch × sample length × 5 bytes).
const BATCH_ROWS: usize = 1024;

/// A `build` output directory.
#[derive(Debug, Clone)]
pub struct BuildDir {
    pub dir: PathBuf,
    /// `build.json` as written by `build` (null when the file is absent).
    pub build_json: serde_json::Value,
    /// The Parquet shards, in order.
    pub shards: Vec<PathBuf>,
}

/// One training sample as the exports need it.
#[derive(Debug, Clone, Copy)]
pub struct TokenRow<'a> {
    pub id: &'a str,
    pub input_ids: &'a [u32],
    pub loss_mask: &'a [u8],
}

impl BuildDir {
    /// Open `dir`: read `build.json` when present and find the shards (those `build.json`
    /// lists, else every `samples-*.parquet`, sorted by name).
    pub fn open(dir: &Path) -> Result<BuildDir, FileError> {
        let manifest = dir.join("build.json");
        let build_json = match std::fs::read(&manifest) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| FileError::format(&manifest, format!("not JSON: {e}")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::Value::Null,
            Err(e) => return Err(FileError::io(&manifest, e)),
        };
        let listed: Option<Vec<PathBuf>> = build_json["shards"].as_array().map(|shards| {
            shards
                .iter()
                .filter_map(|s| s["file"].as_str())
                .map(|f| dir.join(f))
                .collect()
        });
        let shards = match listed {
            Some(list) if !list.is_empty() => list,
            _ => {
                let entries = std::fs::read_dir(dir).map_err(|e| FileError::io(dir, e))?;
                let mut found: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("samples-") && n.ends_with(".parquet"))
                    })
                    .collect();
                found.sort();
                found
            }
        };
        if shards.is_empty() {
            return Err(FileError::format(
                dir,
                "no samples-*.parquet shards: is this a `draftgen build` output directory?",
            ));
        }
        Ok(BuildDir {
            dir: dir.to_path_buf(),
            build_json,
            shards,
        })
    }

    /// The target model's vocabulary size from `build.json` (`model.vocab_size`).
    pub fn vocab_size(&self) -> Option<u64> {
        self.build_json["model"]["vocab_size"].as_u64()
    }

    /// Call `f` on every sample, in shard order then row order.
    pub fn for_each<F, E>(&self, mut f: F) -> Result<u64, E>
    where
        F: FnMut(TokenRow<'_>) -> Result<(), E>,
        E: From<FileError>,
    {
        let mut rows = 0u64;
        let columns = Some(&["id", "input_ids", "loss_mask"][..]);
        self.for_each_batch::<_, E>(columns, BATCH_ROWS, |shard, first_row, batch| {
            rows += visit_batch(shard, first_row, batch, &mut f)?;
            Ok(())
        })?;
        Ok(rows)
    }

    /// Call `f` with every record batch of `batch_rows` rows (of `columns` only, when given; a
    /// shard without one of them is an error), in shard order, with its shard and the shard's row
    /// it starts at.
    pub fn for_each_batch<F, E>(
        &self,
        columns: Option<&[&str]>,
        batch_rows: usize,
        mut f: F,
    ) -> Result<(), E>
    where
        F: FnMut(&Path, u64, &RecordBatch) -> Result<(), E>,
        E: From<FileError>,
    {
        for shard in &self.shards {
            let mut row = 0u64;
            for batch in shard_batches(shard, columns, batch_rows)? {
                let batch = batch.map_err(|e| parquet_error(shard, e))?;
                f(shard, row, &batch)?;
                row += batch.num_rows() as u64;
            }
        }
        Ok(())
    }
}

fn parquet_error(path: &Path, e: impl std::fmt::Display) -> FileError {
    FileError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// A shard's record batches, of `columns` only when given.
fn shard_batches(
    path: &Path,
    columns: Option<&[&str]>,
    batch_rows: usize,
) -> Result<ParquetRecordBatchReader, FileError> {
    let file = File::open(path).map_err(|e| FileError::io(path, e))?;
    let mut builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(path, e))?;
    if let Some(wanted) = columns {
        let roots: Vec<usize> = wanted
            .iter()
            .map(|name| {
                builder
                    .schema()
                    .index_of(name)
                    .map_err(|_| FileError::format(path, format!("no `{name}` column")))
            })
            .collect::<Result<_, _>>()?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    builder
        .with_batch_size(batch_rows)
        .build()
        .map_err(|e| parquet_error(path, e))
}

fn visit_batch<F, E>(path: &Path, first_row: u64, batch: &RecordBatch, f: &mut F) -> Result<u64, E>
where
    F: FnMut(TokenRow<'_>) -> Result<(), E>,
    E: From<FileError>,
{
    let columns = TokenColumns::of(path, first_row, batch)?;
    for i in 0..batch.num_rows() {
        f(columns.row(i)?)?;
    }
    Ok(batch.num_rows() as u64)
}

/// The `id`, `input_ids` and `loss_mask` columns of one record batch of a shard, read row by
/// row; every error names the shard and the shard's row.
pub struct TokenColumns<'a> {
    path: &'a Path,
    first_row: u64,
    ids: &'a StringArray,
    input_ids: &'a ListArray,
    loss_mask: &'a ListArray,
    id_values: &'a [u32],
    mask_values: &'a [u8],
}

impl<'a> TokenColumns<'a> {
    /// The columns of `batch`, which starts at row `first_row` of the shard at `path`.
    pub fn of(
        path: &'a Path,
        first_row: u64,
        batch: &'a RecordBatch,
    ) -> Result<TokenColumns<'a>, FileError> {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| FileError::format(path, format!("no `{name}` column")))
        };
        let ids = column("id")?
            .as_string_opt::<i32>()
            .ok_or_else(|| FileError::format(path, "`id` is not Utf8"))?;
        let input_ids = column("input_ids")?
            .as_list_opt::<i32>()
            .ok_or_else(|| FileError::format(path, "`input_ids` is not List<UInt32>"))?;
        let loss_mask = column("loss_mask")?
            .as_list_opt::<i32>()
            .ok_or_else(|| FileError::format(path, "`loss_mask` is not List<UInt8>"))?;
        let id_values = input_ids
            .values()
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| FileError::format(path, "`input_ids` items are not UInt32"))?
            .values();
        let mask_values = loss_mask
            .values()
            .as_primitive_opt::<UInt8Type>()
            .ok_or_else(|| FileError::format(path, "`loss_mask` items are not UInt8"))?
            .values();
        Ok(TokenColumns {
            path,
            first_row,
            ids,
            input_ids,
            loss_mask,
            id_values,
            mask_values,
        })
    }

    /// "row N" of the shard, for the batch's row `i`.
    pub fn at(&self, i: usize) -> String {
        format!("row {}", self.first_row + i as u64)
    }

    /// The batch's row `i`: an id, and ids and a mask of the same length, the mask all 0s and 1s.
    pub fn row(&self, i: usize) -> Result<TokenRow<'a>, FileError> {
        let at = || self.at(i);
        let path = self.path;
        if self.ids.is_null(i) || self.input_ids.is_null(i) || self.loss_mask.is_null(i) {
            return Err(FileError::format(
                path,
                format!("{}: a null id, input_ids or loss_mask", at()),
            ));
        }
        let id_offsets = self.input_ids.value_offsets();
        let mask_offsets = self.loss_mask.value_offsets();
        let ids_row = &self.id_values[id_offsets[i] as usize..id_offsets[i + 1] as usize];
        let mask_row = &self.mask_values[mask_offsets[i] as usize..mask_offsets[i + 1] as usize];
        if ids_row.len() != mask_row.len() {
            return Err(FileError::format(
                path,
                format!(
                    "{}: input_ids has {} tokens but loss_mask {}",
                    at(),
                    ids_row.len(),
                    mask_row.len()
                ),
            ));
        }
        if let Some(bad) = mask_row.iter().find(|&&m| m > 1) {
            return Err(FileError::format(
                path,
                format!("{}: loss_mask value {bad} is not 0 or 1", at()),
            ));
        }
        Ok(TokenRow {
            id: self.ids.value(i),
            input_ids: ids_row,
            loss_mask: mask_row,
        })
    }
}
