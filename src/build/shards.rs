//! Sharded Parquet output: `samples-00000.parquet`, `samples-00001.parquet`, … (zstd), each
//! bounded in rows and bytes, with row groups of a bounded number of rows — so pyarrow, HF
//! `datasets` and Spark read any run in pieces, and a writer holds at most one row group.
//!
//! Each shard is written under `.partial` and renamed when closed; its SHA-256 is computed while
//! writing (no second read) for `build.json`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, ListBuilder, StringBuilder, UInt32Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::row::Row;
use super::BuildError;

/// Limits of one shard and its row groups.
#[derive(Debug, Clone, Copy)]
pub struct ShardLimits {
    pub rows_per_shard: usize,
    /// A shard is closed once its file passes this size (checked after each batch).
    pub bytes_per_shard: usize,
    pub rows_per_group: usize,
}

impl Default for ShardLimits {
    fn default() -> Self {
        ShardLimits {
            rows_per_shard: 200_000,
            bytes_per_shard: 256 << 20,
            rows_per_group: 1024,
        }
    }
}

/// Rows per Arrow record batch handed to the Parquet writer (see [`ShardWriter::write`]).
const ROWS_PER_RECORD_BATCH: usize = 64;

/// A finished shard, as `build.json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ShardInfo {
    pub file: String,
    pub rows: u64,
    pub sha256: String,
}

/// The Arrow schema of the samples (the column order of the output contract).
pub fn schema() -> SchemaRef {
    let list = |item: DataType| DataType::List(Arc::new(Field::new("item", item, true)));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("input_ids", list(DataType::UInt32), false),
        Field::new("loss_mask", list(DataType::UInt8), false),
        Field::new("prompt_len", DataType::UInt32, false),
        Field::new("completion_len", DataType::UInt32, false),
        Field::new("source", DataType::Utf8, true),
        Field::new("provider", DataType::Utf8, true),
        Field::new("finish_reason", DataType::Utf8, true),
        Field::new("has_tool_calls", DataType::Boolean, false),
        Field::new("fidelity_class", DataType::Utf8, false),
        Field::new("fidelity_reasons", list(DataType::Utf8), false),
        Field::new("turns", DataType::UInt32, false),
    ]))
}

/// Rows → one Arrow record batch.
pub fn record_batch(rows: &[Row]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let tokens: usize = rows.iter().map(|r| r.input_ids.len()).sum();
    let mut id = StringBuilder::new();
    let mut input_ids = ListBuilder::new(UInt32Builder::with_capacity(tokens));
    let mut loss_mask = ListBuilder::new(UInt8Builder::with_capacity(tokens));
    let mut prompt_len = UInt32Builder::with_capacity(rows.len());
    let mut completion_len = UInt32Builder::with_capacity(rows.len());
    let mut source = StringBuilder::new();
    let mut provider = StringBuilder::new();
    let mut finish_reason = StringBuilder::new();
    let mut has_tool_calls = BooleanBuilder::with_capacity(rows.len());
    let mut fidelity_class = StringBuilder::new();
    let mut fidelity_reasons = ListBuilder::new(StringBuilder::new());
    let mut turns = UInt32Builder::with_capacity(rows.len());
    for row in rows {
        id.append_value(&row.id);
        input_ids.values().append_slice(&row.input_ids);
        input_ids.append(true);
        loss_mask.values().append_slice(&row.loss_mask);
        loss_mask.append(true);
        prompt_len.append_value(row.prompt_len);
        completion_len.append_value(row.completion_len);
        source.append_option(row.source.as_deref());
        provider.append_option(row.provider.as_deref());
        finish_reason.append_option(row.finish_reason.as_deref());
        has_tool_calls.append_value(row.has_tool_calls);
        fidelity_class.append_value(row.fidelity_class.name());
        for reason in &row.fidelity_reasons {
            fidelity_reasons.values().append_value(reason_name(*reason));
        }
        fidelity_reasons.append(true);
        turns.append_value(row.turns);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(input_ids.finish()),
        Arc::new(loss_mask.finish()),
        Arc::new(prompt_len.finish()),
        Arc::new(completion_len.finish()),
        Arc::new(source.finish()),
        Arc::new(provider.finish()),
        Arc::new(finish_reason.finish()),
        Arc::new(has_tool_calls.finish()),
        Arc::new(fidelity_class.finish()),
        Arc::new(fidelity_reasons.finish()),
        Arc::new(turns.finish()),
    ];
    RecordBatch::try_new(schema(), columns)
}

/// A reason's stable snake_case name (its serde name).
pub fn reason_name(reason: crate::reconstruct::Reason) -> String {
    match serde_json::to_value(reason) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{reason:?}"),
    }
}

/// A file writer that hashes what it writes.
struct Hashing {
    inner: BufWriter<File>,
    hasher: Sha256,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

struct OpenShard {
    writer: ArrowWriter<Hashing>,
    partial: PathBuf,
    path: PathBuf,
    rows: u64,
}

/// Writes rows into shards under `dir`.
pub struct ShardWriter {
    dir: PathBuf,
    limits: ShardLimits,
    current: Option<OpenShard>,
    done: Vec<ShardInfo>,
}

impl ShardWriter {
    pub fn new(dir: &Path, limits: ShardLimits) -> ShardWriter {
        ShardWriter {
            dir: dir.to_path_buf(),
            limits,
            current: None,
            done: Vec::new(),
        }
    }

    /// Append rows (in order), opening and closing shards as the limits say.
    pub fn write(&mut self, mut rows: &[Row]) -> Result<(), BuildError> {
        while !rows.is_empty() {
            if self.current.is_none() {
                self.open()?;
            }
            let shard = self
                .current
                .as_mut()
                .ok_or_else(|| parquet_err("no open shard"))?;
            let room = self.limits.rows_per_shard - shard.rows as usize;
            let (now, later) = rows.split_at(room.min(rows.len()));
            // Small record batches: the writer's per-call buffers (the cast to Int32, the level
            // indices, the gathered values: ~30 bytes a token) stay small enough to be reused
            // from the allocator's free lists instead of faulting in fresh pages every call, and
            // stay in cache. Row groups and pages are cut by the writer's own limits, not here.
            for chunk in now.chunks(ROWS_PER_RECORD_BATCH) {
                let batch = record_batch(chunk).map_err(|e| parquet_err(e.to_string()))?;
                shard
                    .writer
                    .write(&batch)
                    .map_err(|e| parquet_err(e.to_string()))?;
            }
            shard.rows += now.len() as u64;
            let full = shard.rows as usize >= self.limits.rows_per_shard
                || shard.writer.bytes_written() + shard.writer.in_progress_size()
                    >= self.limits.bytes_per_shard;
            if full {
                self.close_current()?;
            }
            rows = later;
        }
        Ok(())
    }

    /// Close the last shard and return every shard written. A build with no rows still writes
    /// one (empty) shard, so readers always find the schema.
    pub fn finish(mut self) -> Result<Vec<ShardInfo>, BuildError> {
        if self.current.is_none() && self.done.is_empty() {
            self.open()?;
        }
        self.close_current()?;
        Ok(self.done)
    }

    fn open(&mut self) -> Result<(), BuildError> {
        let name = format!("samples-{:05}.parquet", self.done.len());
        let path = self.dir.join(&name);
        let partial = self.dir.join(format!("{name}.partial"));
        let file = File::create(&partial).map_err(|e| BuildError::io(&partial, e))?;
        let props = writer_properties(self.limits.rows_per_group)?;
        let sink = Hashing {
            inner: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
        };
        let writer = ArrowWriter::try_new(sink, schema(), Some(props))
            .map_err(|e| parquet_err(e.to_string()))?;
        self.current = Some(OpenShard {
            writer,
            partial,
            path,
            rows: 0,
        });
        Ok(())
    }

    fn close_current(&mut self) -> Result<(), BuildError> {
        let Some(shard) = self.current.take() else {
            return Ok(());
        };
        let mut sink = shard
            .writer
            .into_inner()
            .map_err(|e| parquet_err(e.to_string()))?;
        sink.flush()
            .map_err(|e| BuildError::io(&shard.partial, e))?;
        let sha256 = hex::encode(sink.hasher.finalize());
        let file = sink
            .inner
            .into_inner()
            .map_err(|e| BuildError::io(&shard.partial, e.into_error()))?;
        file.sync_all()
            .map_err(|e| BuildError::io(&shard.partial, e))?;
        std::fs::rename(&shard.partial, &shard.path).map_err(|e| BuildError::io(&shard.path, e))?;
        self.done.push(ShardInfo {
            file: shard
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            rows: shard.rows,
            sha256,
        });
        Ok(())
    }
}

/// zstd at level 1 everywhere (pyarrow's default level, what the Python reference writes: level
/// 3 took a third more of the writer's CPU for files 13% smaller); the two token columns tuned
/// for what they hold (the values, and so what any reader gets, are the same under every
/// encoding):
/// - `loss_mask` is a few runs (0…0 1…1): plain, without a dictionary, and zstd folds the runs
///   (a dictionary spent half of the writer's interning CPU on a column of two values, and
///   delta encoding a tenth of the writer's CPU, for 0.3% of the file);
/// - `input_ids` keeps its dictionary (without it zstd sees 4-byte ids: same CPU, 35% larger);
/// - neither gets min/max statistics: no reader prunes on a token id, and they cost a pass
///   over every token.
fn writer_properties(rows_per_group: usize) -> Result<WriterProperties, BuildError> {
    let item =
        |column: &str| ColumnPath::from(vec![column.to_string(), "list".into(), "item".into()]);
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).map_err(|e| parquet_err(e.to_string()))?,
        ))
        .set_max_row_group_row_count(Some(rows_per_group))
        .set_column_dictionary_enabled(item("loss_mask"), false)
        .set_column_encoding(item("loss_mask"), Encoding::PLAIN)
        .set_column_statistics_enabled(item("loss_mask"), EnabledStatistics::None)
        .set_column_statistics_enabled(item("input_ids"), EnabledStatistics::None)
        .build())
}

fn parquet_err(message: impl Into<String>) -> BuildError {
    BuildError::Parquet(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::RowMeta;
    use crate::reconstruct::{Fidelity, FidelityClass};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{UInt32Type, UInt8Type};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn rows(n: usize) -> Vec<Row> {
        (0..n)
            .map(|i| {
                let prompt: Vec<u32> = (0..(i % 7 + 1) as u32).map(|t| t * 1000 + 7).collect();
                let completion: Vec<u32> = (0..(i % 5 + 1) as u32).map(|t| 163_000 + t).collect();
                Row::single(
                    format!("r{i}"),
                    prompt,
                    &completion,
                    Fidelity::new(FidelityClass::Unique),
                    RowMeta::default(),
                )
            })
            .collect()
    }

    /// Rows split over several record batches and row groups (and two shards) read back as
    /// written, and the mask column is plain, without a dictionary.
    #[test]
    fn chunked_batches_and_mask_encoding_read_back_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let written = rows(300);
        let limits = ShardLimits {
            rows_per_shard: 250,
            bytes_per_shard: usize::MAX,
            rows_per_group: 100,
        };
        let mut writer = ShardWriter::new(dir.path(), limits);
        writer.write(&written[..130]).expect("write");
        writer.write(&written[130..]).expect("write");
        let shards = writer.finish().expect("finish");
        assert_eq!(shards.iter().map(|s| s.rows).collect::<Vec<_>>(), [250, 50]);
        let mut read = Vec::new();
        for shard in &shards {
            let file = File::open(dir.path().join(&shard.file)).expect("open");
            let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("reader");
            let meta = builder.metadata().clone();
            for group in meta.row_groups() {
                let mask = group
                    .columns()
                    .iter()
                    .find(|c| c.column_path().string() == "loss_mask.list.item")
                    .expect("loss_mask column");
                let encodings: Vec<Encoding> = mask.encodings().collect();
                assert!(encodings.contains(&Encoding::PLAIN), "{encodings:?}");
                assert!(
                    !encodings.contains(&Encoding::RLE_DICTIONARY)
                        && mask.dictionary_page_offset().is_none(),
                    "{encodings:?}"
                );
            }
            for batch in builder.build().expect("build") {
                let batch = batch.expect("batch");
                let ids = batch.column(1).as_list::<i32>();
                let masks = batch.column(2).as_list::<i32>();
                for i in 0..batch.num_rows() {
                    let id = ids.value(i);
                    let mask = masks.value(i);
                    read.push((
                        batch.column(0).as_string::<i32>().value(i).to_string(),
                        id.as_primitive::<UInt32Type>().values().to_vec(),
                        mask.as_primitive::<UInt8Type>().values().to_vec(),
                    ));
                }
            }
        }
        let want: Vec<(String, Vec<u32>, Vec<u8>)> = written
            .iter()
            .map(|r| (r.id.clone(), r.input_ids.clone(), r.loss_mask.clone()))
            .collect();
        assert_eq!(read, want);
    }
}
