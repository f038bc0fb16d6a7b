//! A bounded cache of pre-token ("word") → ids, as Hugging Face's BPE and tiktoken keep.
//!
//! After the split pattern, most pieces of chat text repeat (template boilerplate, JSON keys,
//! common words), and a piece's ids depend on its bytes alone, so remembering them skips the
//! byte-pair merge (and, for tiktoken, the probe of a 160k-entry rank table) for all but the
//! first occurrence. Keys and ids live in two flat arenas, so a hit allocates nothing and a
//! miss at most grows an arena; past [`MAX_IDS`] ids or [`MAX_WORDS`] words the cache is
//! emptied and refills with what the current text uses.
//!
//! One cache per thread and encoder (see [`super::bpe`] and [`super::tiktoken`]): no locks on
//! the hot path.

use hashbrown::HashTable;
use std::hash::Hasher as _;

/// Pieces longer than this are not cached: long runs (whitespace, repeated chars) rarely repeat
/// and would crowd out the short pieces that do.
const MAX_PIECE_BYTES: usize = 128;
/// Bounds on the contents; at roughly 24 bytes of table + ~8 bytes of key + ~8 bytes of ids
/// per word, a full cache is about 2.5 MiB.
const MAX_WORDS: usize = 1 << 16;
const MAX_IDS: usize = 1 << 17;

#[derive(Default)]
pub(crate) struct WordCache {
    table: HashTable<Word>,
    /// Every cached piece's bytes, back to back.
    bytes: Vec<u8>,
    /// Every cached piece's ids, back to back.
    ids: Vec<u32>,
    /// Tests compare the cached path with this: every piece encoded afresh.
    #[cfg(test)]
    disabled: bool,
}

#[derive(Clone, Copy)]
struct Word {
    hash: u64,
    bytes_at: u32,
    bytes_len: u32,
    ids_at: u32,
    ids_len: u32,
}

impl WordCache {
    /// Append the ids of `piece` to `out`: the cached ones, or those `encode` appends (which
    /// are then cached).
    pub(crate) fn encode(
        &mut self,
        piece: &[u8],
        out: &mut Vec<u32>,
        encode: impl FnOnce(&[u8], &mut Vec<u32>),
    ) {
        #[cfg(test)]
        if self.disabled {
            return encode(piece, out);
        }
        if piece.len() > MAX_PIECE_BYTES {
            return encode(piece, out);
        }
        let hash = hash(piece);
        let bytes = &self.bytes;
        if let Some(word) = self.table.find(hash, |w| {
            w.hash == hash
                && same_bytes(&bytes[w.bytes_at as usize..][..w.bytes_len as usize], piece)
        }) {
            out.extend_from_slice(&self.ids[word.ids_at as usize..][..word.ids_len as usize]);
            return;
        }
        let first = out.len();
        encode(piece, out);
        self.insert(hash, piece, &out[first..]);
    }

    /// A cache that caches nothing (for tests of the cached path against the uncached one).
    #[cfg(test)]
    pub(crate) fn disabled() -> Self {
        Self {
            disabled: true,
            ..Self::default()
        }
    }

    fn insert(&mut self, hash: u64, piece: &[u8], ids: &[u32]) {
        if self.table.len() >= MAX_WORDS || self.ids.len() + ids.len() > MAX_IDS {
            self.table.clear();
            self.bytes.clear();
            self.ids.clear();
        }
        let word = Word {
            hash,
            // In range: both arenas are bounded far below u32::MAX.
            bytes_at: self.bytes.len() as u32,
            bytes_len: piece.len() as u32,
            ids_at: self.ids.len() as u32,
            ids_len: ids.len() as u32,
        };
        self.bytes.extend_from_slice(piece);
        self.ids.extend_from_slice(ids);
        self.table.insert_unique(hash, word, |w| w.hash);
    }
}

/// `a == b` without a call to `memcmp`, which costs more than comparing a few bytes.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let ((a8, a_rest), (b8, b_rest)) = (a.as_chunks::<8>(), b.as_chunks::<8>());
    a8.iter().zip(b8).all(|(x, y)| x == y) && a_rest.iter().zip(b_rest).all(|(x, y)| x == y)
}

fn hash(piece: &[u8]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(piece);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_return_what_the_miss_produced() {
        let mut cache = WordCache::default();
        let mut calls = 0;
        let mut out = Vec::new();
        for _ in 0..3 {
            cache.encode(b"hello", &mut out, |p, o| {
                calls += 1;
                o.extend(p.iter().map(|&b| u32::from(b)));
            });
        }
        assert_eq!(calls, 1);
        assert_eq!(out, [104, 101, 108, 108, 111].repeat(3));
    }

    #[test]
    fn stays_bounded_and_correct_past_its_limits() {
        let mut cache = WordCache::default();
        let ids = |p: &[u8], o: &mut Vec<u32>| o.extend(p.iter().map(|&b| u32::from(b) * 7));
        for round in 0..2 {
            for i in 0..(MAX_WORDS + 10) {
                let piece = format!("w{i}");
                let mut out = Vec::new();
                cache.encode(piece.as_bytes(), &mut out, ids);
                let mut want = Vec::new();
                ids(piece.as_bytes(), &mut want);
                assert_eq!(out, want, "round {round} piece {piece}");
                assert!(cache.table.len() <= MAX_WORDS && cache.ids.len() <= MAX_IDS);
            }
        }
        let long = vec![b' '; MAX_PIECE_BYTES + 1];
        let mut out = Vec::new();
        cache.encode(&long, &mut out, ids);
        assert_eq!(out.len(), long.len());
    }
}
