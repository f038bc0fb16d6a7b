//! `.npy` files byte-for-byte as `numpy.save` writes them (format 1.0), for speculators' `d2t.npy`
//! and `t2d.npy` (loaded with `np.load` in `scripts/train.py`).
//!
//! Hand-written: the format is a 10-byte preamble, a Python-literal header padded to 64 bytes,
//! then the raw little-endian data; the Rust npy crates pull in a Python-literal parser or
//! `ndarray` to do the same. numpy's own header layout (`numpy/lib/format.py::_write_array_header`:
//! sorted keys, 21 spaces of growth room for the first axis, `\n`-terminated, 64-byte aligned) is
//! followed so the file equals `np.save`'s; `tests/py/check_export.py` compares the bytes.

use std::path::Path;

use super::ExportError;

const MAGIC: &[u8] = b"\x93NUMPY";
const ARRAY_ALIGN: usize = 64;
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

fn header(descr: &str, len: usize) -> Vec<u8> {
    let shape = format!("({len},)");
    let mut text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    text.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(len.to_string().len())));
    let hlen = text.len() + 1;
    let pad = ARRAY_ALIGN - (MAGIC.len() + 2 + 2 + hlen) % ARRAY_ALIGN;
    let pad = if pad == ARRAY_ALIGN { 0 } else { pad };
    text.push_str(&" ".repeat(pad));
    text.push('\n');
    let mut out = Vec::with_capacity(10 + text.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// A 1-D int64 array (`'<i8'`).
pub fn write_i64(path: &Path, values: &[i64]) -> Result<(), ExportError> {
    let mut bytes = header("<i8", values.len());
    bytes.reserve(values.len() * 8);
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).map_err(|e| ExportError::io(path, e))
}

/// A 1-D bool array (`'|b1'`, one byte per value).
pub fn write_bool(path: &Path, values: &[bool]) -> Result<(), ExportError> {
    let mut bytes = header("|b1", values.len());
    bytes.extend(values.iter().map(|&b| b as u8));
    std::fs::write(path, bytes).map_err(|e| ExportError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::header;

    #[test]
    fn header_is_aligned_and_terminated() {
        for len in [0, 3, 163_840, 10_000_000] {
            let h = header("<i8", len);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(h.last(), Some(&b'\n'));
        }
    }
}
