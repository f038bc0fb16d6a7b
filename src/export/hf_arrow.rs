//! A Hugging Face `Dataset.save_to_disk` directory written without Python: what speculators'
//! `scripts/prepare_data.py` writes and `datasets.load_from_disk` reads.
//!
//! Layout (datasets ≥ 4, `arrow_dataset.py::save_to_disk`): `data-00000-of-0000N.arrow` in Arrow
//! IPC **stream** format, each with the schema metadata `huggingface` =
//! `{"info": {"features": …}}`; `dataset_info.json` (the features); `state.json` (the data files,
//! a fingerprint, and the format — `torch`, as speculators' `set_format(type="torch")` leaves
//! it). Shards are cut near 500 MB as datasets' default `max_shard_size`, rows are written in
//! record batches of 1000 as its `writer_batch_size`.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};
use sha2::{Digest, Sha256};

use super::ExportError;

const WRITER_BATCH_SIZE: usize = 1000;
const MAX_SHARD_BYTES: u64 = 500 * 1000 * 1000;

fn features() -> serde_json::Value {
    let list =
        serde_json::json!({"feature": {"dtype": "int64", "_type": "Value"}, "_type": "List"});
    serde_json::json!({
        "input_ids": list,
        "loss_mask": list,
        "seq_len": {"dtype": "int64", "_type": "Value"},
    })
}

fn schema() -> Arc<Schema> {
    let item = || Arc::new(Field::new("item", DataType::Int64, true));
    let meta = serde_json::json!({"info": {"features": features()}}).to_string();
    Arc::new(
        Schema::new(vec![
            Field::new("input_ids", DataType::List(item()), true),
            Field::new("loss_mask", DataType::List(item()), true),
            Field::new("seq_len", DataType::Int64, true),
        ])
        .with_metadata(std::collections::HashMap::from([(
            "huggingface".to_string(),
            meta,
        )])),
    )
}

/// Streams rows into a `save_to_disk` directory.
pub struct DatasetWriter {
    dir: PathBuf,
    schema: Arc<Schema>,
    ids: ListBuilder<Int64Builder>,
    mask: ListBuilder<Int64Builder>,
    seq_len: Int64Builder,
    pending: usize,
    shard: Option<(PathBuf, StreamWriter<BufWriter<File>>)>,
    shard_bytes: u64,
    finished: Vec<PathBuf>,
    hasher: Sha256,
    rows: u64,
}

impl DatasetWriter {
    pub fn create(dir: &Path) -> Result<DatasetWriter, ExportError> {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, e))?;
        Ok(DatasetWriter {
            dir: dir.to_path_buf(),
            schema: schema(),
            ids: ListBuilder::new(Int64Builder::new()),
            mask: ListBuilder::new(Int64Builder::new()),
            seq_len: Int64Builder::new(),
            pending: 0,
            shard: None,
            shard_bytes: 0,
            finished: Vec::new(),
            hasher: Sha256::new(),
            rows: 0,
        })
    }

    pub fn push(&mut self, input_ids: &[u32], loss_mask: &[u8]) -> Result<(), ExportError> {
        for &id in input_ids {
            self.ids.values().append_value(id as i64);
            self.hasher.update(id.to_le_bytes());
        }
        self.ids.append(true);
        for &m in loss_mask {
            self.mask.values().append_value(m as i64);
        }
        self.hasher.update(loss_mask);
        self.mask.append(true);
        self.seq_len.append_value(input_ids.len() as i64);
        self.pending += 1;
        self.rows += 1;
        self.shard_bytes += 16 * input_ids.len() as u64 + 24;
        if self.pending >= WRITER_BATCH_SIZE {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.pending == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.ids.finish()),
            Arc::new(self.mask.finish()),
            Arc::new(self.seq_len.finish()),
        ];
        self.pending = 0;
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| ExportError::Invalid(format!("arrow batch: {e}")))?;
        if self.shard.is_none() {
            let path = self
                .dir
                .join(format!("data-{:05}.arrow.partial", self.finished.len()));
            let file = File::create(&path).map_err(|e| ExportError::io(&path, e))?;
            let writer = StreamWriter::try_new(BufWriter::new(file), &self.schema)
                .map_err(|e| ExportError::format(&path, e.to_string()))?;
            self.shard = Some((path, writer));
        }
        if let Some((path, writer)) = self.shard.as_mut() {
            writer
                .write(&batch)
                .map_err(|e| ExportError::format(&*path, e.to_string()))?;
        }
        if self.shard_bytes >= MAX_SHARD_BYTES {
            self.close_shard()?;
        }
        Ok(())
    }

    fn close_shard(&mut self) -> Result<(), ExportError> {
        if let Some((path, mut writer)) = self.shard.take() {
            writer
                .finish()
                .map_err(|e| ExportError::format(&path, e.to_string()))?;
            self.finished.push(path);
        }
        self.shard_bytes = 0;
        Ok(())
    }

    /// Close the last shard, name the shards `data-0000i-of-0000N.arrow`, write the JSON files.
    pub fn finish(mut self) -> Result<u64, ExportError> {
        self.flush()?;
        self.close_shard()?;
        if self.finished.is_empty() {
            // An empty dataset is still one (empty) shard, as datasets writes it.
            let path = self.dir.join("data-00000.arrow.partial");
            let file = File::create(&path).map_err(|e| ExportError::io(&path, e))?;
            let mut writer = StreamWriter::try_new(BufWriter::new(file), &self.schema)
                .map_err(|e| ExportError::format(&path, e.to_string()))?;
            writer
                .finish()
                .map_err(|e| ExportError::format(&path, e.to_string()))?;
            self.finished.push(path);
        }
        let n = self.finished.len();
        let mut data_files = Vec::with_capacity(n);
        for (i, partial) in self.finished.iter().enumerate() {
            let name = format!("data-{i:05}-of-{n:05}.arrow");
            let target = self.dir.join(&name);
            std::fs::rename(partial, &target).map_err(|e| ExportError::io(&target, e))?;
            data_files.push(serde_json::json!({ "filename": name }));
        }
        let fingerprint = hex::encode(&self.hasher.finalize()[..8]);
        let info = serde_json::json!({
            "citation": "", "description": "", "features": features(), "homepage": "", "license": "",
        });
        let state = serde_json::json!({
            "_data_files": data_files,
            "_fingerprint": fingerprint,
            "_format_columns": null,
            "_format_kwargs": {},
            "_format_type": "torch",
            "_output_all_columns": false,
            "_split": null,
        });
        for (name, value) in [("dataset_info.json", info), ("state.json", state)] {
            let path = self.dir.join(name);
            let text = serde_json::to_string_pretty(&value)
                .map_err(|e| ExportError::Invalid(e.to_string()))?;
            std::fs::write(&path, text).map_err(|e| ExportError::io(&path, e))?;
        }
        Ok(self.rows)
    }
}
