//! A per-thread memo of the last long texts encoded, and their ids.
//!
//! Reconstruction encodes the same long text several times for one answer: a candidate's text
//! is checked against the count and then encoded for its ids, and an answer of an undeclared
//! server is rebuilt under each known shape it could be (`reconstruct/undeclared.rs`), whose
//! candidates are mostly the same texts. Encoding a 2,000-token answer costs tens of
//! microseconds; finding it here costs a hash and a compare of its bytes. The key is the whole
//! text and the tokenizer's identity, so a hit returns exactly the ids encoding would.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::hash::Hasher as _;

/// Texts shorter than this are encoded afresh (cheap, and many: they would crowd out the rest).
pub(crate) const MIN_BYTES: usize = 512;
/// Entries kept per thread (the texts one answer's rebuilds encode; about 1 MB at 2,000 tokens).
const CAPACITY: usize = 48;

struct Entry {
    tokenizer: u64,
    hash: u64,
    text: Box<str>,
    ids: Vec<u32>,
}

thread_local! {
    static RECENT: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

fn hash_of(text: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(text.as_bytes());
    h.finish()
}

/// The ids of `text` under tokenizer `tokenizer` (a [`super::Tokenizer`]'s unique number):
/// remembered, or `encode`d and remembered (only when it succeeds).
pub(crate) fn encode<E>(
    tokenizer: u64,
    text: &str,
    encode: impl FnOnce(&str) -> Result<Vec<u32>, E>,
) -> Result<Vec<u32>, E> {
    if text.len() < MIN_BYTES {
        return encode(text);
    }
    let hash = hash_of(text);
    let found = RECENT.with_borrow(|recent| {
        recent
            .iter()
            .find(|e| e.tokenizer == tokenizer && e.hash == hash && *e.text == *text)
            .map(|e| e.ids.clone())
    });
    if let Some(ids) = found {
        return Ok(ids);
    }
    let ids = encode(text)?;
    RECENT.with_borrow_mut(|recent| {
        if recent.len() == CAPACITY {
            recent.pop_front();
        }
        recent.push_back(Entry {
            tokenizer,
            hash,
            text: text.into(),
            ids: ids.clone(),
        });
    });
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_needs_the_same_tokenizer_and_text() {
        let long = "a".repeat(MIN_BYTES);
        let calls = std::cell::Cell::new(0);
        let enc = |t: &str| -> Result<Vec<u32>, ()> {
            calls.set(calls.get() + 1);
            Ok(vec![t.len() as u32])
        };
        assert_eq!(encode(1, &long, enc), Ok(vec![512]));
        assert_eq!(encode(1, &long, enc), Ok(vec![512]));
        assert_eq!(calls.get(), 1);
        assert_eq!(encode(2, &long, enc), Ok(vec![512]));
        let other = format!("{long}b");
        assert_eq!(encode(1, &other, enc), Ok(vec![513]));
        assert_eq!(calls.get(), 3);
        // short texts are never remembered
        assert_eq!(encode(1, "short", enc), Ok(vec![5]));
        assert_eq!(encode(1, "short", enc), Ok(vec![5]));
        assert_eq!(calls.get(), 5);
    }
}
