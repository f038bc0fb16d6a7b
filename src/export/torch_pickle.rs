//! `torch.save` files written without torch: SpecForge's vocabulary map (`{"d2t", "t2d"}` as
//! tensors) and speculators' `token_freq.pt` (a plain `dict[int, int]`).
//!
//! The format (torch ≥ 1.6 "zipfile serialization", `torch/serialization.py::_save`) is a
//! stored (uncompressed) zip with one folder, here `archive/`:
//! `data.pkl` (pickle protocol 2), `byteorder` (`little`), `data/<key>` (each tensor's raw
//! little-endian storage, 64-byte aligned as torch aligns them) and `version` (`3`).
//! A tensor pickles as `torch._utils._rebuild_tensor_v2(<persistent id>, offset, size, stride,
//! requires_grad, OrderedDict())`, the persistent id being
//! `("storage", torch.LongStorage|BoolStorage, key, "cpu", numel)` — exactly what `torch.load`
//! (also with `weights_only=True`, torch's default since 2.6) accepts.
//!
//! Hand-written because no Rust crate writes torch's persistent-id pickles (serde-pickle has no
//! `BINPERSID`); the zip itself comes from the `zip` crate. Checked by loading with real
//! `torch.load` (see README/tests/py) and by a pure-Python copy of its loader in CI.

use std::io::Write;
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::ExportError;

/// A 1-D tensor to save.
#[derive(Debug, Clone, Copy)]
pub enum Tensor<'a> {
    I64(&'a [i64]),
    Bool(&'a [bool]),
}

impl Tensor<'_> {
    fn storage_class(&self) -> &'static str {
        match self {
            Tensor::I64(_) => "LongStorage",
            Tensor::Bool(_) => "BoolStorage",
        }
    }
    fn len(&self) -> usize {
        match self {
            Tensor::I64(v) => v.len(),
            Tensor::Bool(v) => v.len(),
        }
    }
    fn bytes(&self) -> Vec<u8> {
        match self {
            Tensor::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Tensor::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        }
    }
}

/// Pickle protocol 2 opcodes (`Lib/pickle.py`).
mod op {
    pub const PROTO: u8 = 0x80;
    pub const STOP: u8 = b'.';
    pub const MARK: u8 = b'(';
    pub const EMPTY_DICT: u8 = b'}';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const SETITEMS: u8 = b'u';
    pub const TUPLE: u8 = b't';
    pub const TUPLE1: u8 = 0x85;
    pub const BINUNICODE: u8 = b'X';
    pub const BININT: u8 = b'J';
    pub const BININT1: u8 = b'K';
    pub const BININT2: u8 = b'M';
    pub const LONG1: u8 = 0x8a;
    pub const NEWFALSE: u8 = 0x89;
    pub const GLOBAL: u8 = b'c';
    pub const REDUCE: u8 = b'R';
    pub const BINPERSID: u8 = b'Q';
}

/// `pickle.Pickler` batches dict items by 1000 per `SETITEMS`.
const BATCH: usize = 1000;

/// A minimal pickle protocol-2 encoder: only what these two files need.
#[derive(Default)]
struct Pickle(Vec<u8>);

impl Pickle {
    fn new() -> Pickle {
        Pickle(vec![op::PROTO, 2])
    }
    fn op(&mut self, code: u8) {
        self.0.push(code);
    }
    fn str(&mut self, s: &str) {
        self.0.push(op::BINUNICODE);
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
    /// An int as `pickle.Pickler.save_long` writes it.
    fn int(&mut self, v: i128) {
        if (0..=0xff).contains(&v) {
            self.0.extend_from_slice(&[op::BININT1, v as u8]);
        } else if (0..=0xffff).contains(&v) {
            self.0.push(op::BININT2);
            self.0.extend_from_slice(&(v as u16).to_le_bytes());
        } else if (i32::MIN as i128..=i32::MAX as i128).contains(&v) {
            self.0.push(op::BININT);
            self.0.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            // LONG1: little-endian two's complement, shortest that keeps the sign.
            let mut bytes = v.to_le_bytes().to_vec();
            while bytes.len() > 1 {
                let last = bytes[bytes.len() - 1];
                let prev = bytes[bytes.len() - 2];
                if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
                    bytes.pop();
                } else {
                    break;
                }
            }
            self.0.push(op::LONG1);
            self.0.push(bytes.len() as u8);
            self.0.extend_from_slice(&bytes);
        }
    }
    fn global(&mut self, module: &str, name: &str) {
        self.0.push(op::GLOBAL);
        self.0
            .extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    }
    fn finish(mut self) -> Vec<u8> {
        self.0.push(op::STOP);
        self.0
    }

    /// `_rebuild_tensor_v2(storage, 0, (n,), (1,), False, OrderedDict())` for storage `key`.
    fn tensor(&mut self, key: &str, t: &Tensor<'_>) {
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.op(op::MARK);
        // the persistent id of the storage
        self.op(op::MARK);
        self.str("storage");
        self.global("torch", t.storage_class());
        self.str(key);
        self.str("cpu");
        self.int(t.len() as i128);
        self.op(op::TUPLE);
        self.op(op::BINPERSID);
        self.int(0);
        self.int(t.len() as i128);
        self.op(op::TUPLE1);
        self.int(1);
        self.op(op::TUPLE1);
        self.op(op::NEWFALSE);
        self.global("collections", "OrderedDict");
        self.op(op::EMPTY_TUPLE);
        self.op(op::REDUCE);
        self.op(op::TUPLE);
        self.op(op::REDUCE);
    }
}

/// Write `records` (name, bytes) as a torch zip archive.
fn write_archive(path: &Path, data_pkl: &[u8], storages: &[Vec<u8>]) -> Result<(), ExportError> {
    let zip_err = |e: zip::result::ZipError| ExportError::format(path, format!("writing zip: {e}"));
    let file = std::fs::File::create(path).map_err(|e| ExportError::io(path, e))?;
    let mut zip = ZipWriter::new(std::io::BufWriter::new(file));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .with_alignment(64);
    let put = |zip: &mut ZipWriter<_>, name: &str, bytes: &[u8]| -> Result<(), ExportError> {
        zip.start_file(format!("archive/{name}"), options)
            .map_err(zip_err)?;
        zip.write_all(bytes).map_err(|e| ExportError::io(path, e))
    };
    put(&mut zip, "data.pkl", data_pkl)?;
    put(&mut zip, "byteorder", b"little")?;
    for (key, bytes) in storages.iter().enumerate() {
        put(&mut zip, &format!("data/{key}"), bytes)?;
    }
    put(&mut zip, "version", b"3\n")?;
    let mut inner = zip.finish().map_err(zip_err)?;
    inner.flush().map_err(|e| ExportError::io(path, e))
}

/// `torch.save({name: tensor, ...})`, keys in the given order.
pub fn save_tensor_dict(path: &Path, tensors: &[(&str, Tensor<'_>)]) -> Result<(), ExportError> {
    let mut p = Pickle::new();
    p.op(op::EMPTY_DICT);
    p.op(op::MARK);
    let mut storages = Vec::with_capacity(tensors.len());
    for (key, (name, tensor)) in tensors.iter().enumerate() {
        p.str(name);
        p.tensor(&key.to_string(), tensor);
        storages.push(tensor.bytes());
    }
    p.op(op::SETITEMS);
    write_archive(path, &p.finish(), &storages)
}

/// `torch.save({int: int, ...})`, items in the given order.
pub fn save_int_dict(path: &Path, items: &[(u32, u64)]) -> Result<(), ExportError> {
    let mut p = Pickle::new();
    p.op(op::EMPTY_DICT);
    for batch in items.chunks(BATCH) {
        p.op(op::MARK);
        for &(k, v) in batch {
            p.int(k as i128);
            p.int(v as i128);
        }
        p.op(op::SETITEMS);
    }
    write_archive(path, &p.finish(), &[])
}

#[cfg(test)]
mod tests {
    use super::Pickle;

    #[test]
    fn ints_encode_like_pickle() {
        // python3 -c "import pickle; print(pickle.dumps(300, 2).hex(), pickle.dumps(2**31, 2).hex(), pickle.dumps(-1, 2).hex())"
        let enc = |v: i128| {
            let mut p = Pickle(Vec::new());
            p.int(v);
            hex::encode(p.0)
        };
        assert_eq!(enc(300), "4d2c01");
        assert_eq!(enc(1 << 31), "8a050000008000");
        assert_eq!(enc(-1), "4affffffff");
    }
}
