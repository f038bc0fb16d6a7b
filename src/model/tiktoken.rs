//! tiktoken-style rank files (`tiktoken.model`: base64 token + rank per line) and Kimi's
//! pre-splitting of long inputs.
//!
//! The reference BPE is tiktoken-rs's `CoreBPE`, the same Rust core (fancy-regex + byte-pair
//! merge) that Python `tiktoken` runs; this module adds what lives around it in Python: reading
//! and validating the rank file, Kimi's split pattern and special-token table
//! (`tokenization_kimi.py`), and Kimi's pre-splitting of long inputs into pieces that Python
//! encodes one by one. Encoding normally takes a fast path with the same ids (`FastEncoder`):
//! literals found by aho-corasick, pieces by a DFA (`split.rs`), and a per-thread word
//! cache in front of the rank lookup and merge (`word_cache.rs`).

use base64::Engine as _;
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::path::Path;
use tiktoken_rs::CoreBPE;

use super::bpe::{byte_level_alphabet, EncodeState, StatePool};
use super::split::{FastSplitter, Literals, Part};
use super::ModelError;

pub use super::split::KIMI_PATTERN;

/// Number of mergeable ranks in Kimi's `tiktoken.model` (ids `0..163_584`).
pub const KIMI_NUM_RANKS: usize = 163_584;
/// `TikTokenTokenizer.num_reserved_special_tokens`: special ids follow the ranks.
pub const KIMI_NUM_SPECIAL: usize = 256;
/// `TIKTOKEN_MAX_ENCODE_CHARS` in `tokenization_kimi.py`.
const KIMI_CHUNK_CHARS: usize = 400_000;
/// `MAX_NO_WHITESPACES_CHARS` in `tokenization_kimi.py`.
const KIMI_MAX_RUN_CHARS: usize = 25_000;

/// Read a tiktoken rank file: one `base64-token rank` pair per line.
///
/// Ranks must be unique and every token distinct (tiktoken-rs would panic otherwise), so both are
/// checked here with the offending line named.
pub fn load_ranks(path: &Path) -> Result<FxHashMap<Vec<u8>, u32>, ModelError> {
    let file_error = |message: String| ModelError::File {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        file_error(format!(
            "cannot read the tiktoken rank file ({e}); pass --model with a directory holding tiktoken.model"
        ))
    })?;
    let mut ranks = FxHashMap::default();
    ranks.reserve(text.len() / 17);
    let mut seen_ranks = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad_line = |what: &str| {
            file_error(format!(
                "line {line_no}: {what}; expected `BASE64TOKEN RANK` (is this really a tiktoken.model file?)"
            ))
        };
        let mut fields = line.split_whitespace();
        let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(bad_line("not two fields"));
        };
        let token = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|_| bad_line("token is not valid base64"))?;
        let rank: u32 = rank
            .parse()
            .map_err(|_| bad_line("rank is not an unsigned integer"))?;
        if !seen_ranks.insert(rank) {
            return Err(bad_line(&format!("rank {rank} appears twice")));
        }
        if ranks.insert(token, rank).is_some() {
            return Err(bad_line("token appears twice"));
        }
    }
    if ranks.is_empty() {
        return Err(file_error(
            "no ranks found; the file is empty or not a tiktoken.model".into(),
        ));
    }
    Ok(ranks)
}

/// A tiktoken encoding: ranks, split pattern, special tokens, and optionally Kimi's pre-split.
pub struct TiktokenModel {
    bpe: CoreBPE,
    /// The same encoding on `regex-automata` DFAs, aho-corasick and a word cache, used when
    /// the pattern allows it (see [`FastSplitter`]); `CoreBPE` otherwise.
    fast: Option<FastEncoder>,
    /// `decoder[id]` = token bytes, for ids below `num_ranks`.
    decoder: Vec<Vec<u8>>,
    /// Special tokens: literal → id, and id → literal.
    special_by_text: FxHashMap<String, u32>,
    special_by_id: FxHashMap<u32, String>,
    /// Literals in id order (stable output for `special_tokens()`).
    special_literals: Vec<String>,
    /// Byte-level (GPT-2 `bytes_to_unicode`) spelling of each ordinary token → id, the form
    /// Hugging Face's `convert_tokens_to_ids` uses for Kimi.
    byte_level_to_id: FxHashMap<String, u32>,
    /// `special_first_bytes[b]`: some special literal starts with byte `b`.
    special_first_bytes: [bool; 256],
    kimi_presplit: bool,
    vocab_size: usize,
}

impl TiktokenModel {
    /// Build from a rank file, a split pattern and special tokens (`literal → id`).
    /// `kimi_presplit` mirrors `tokenization_kimi.py`'s chunking of long inputs.
    pub fn new(
        ranks_path: &Path,
        pattern: &str,
        specials: Vec<(String, u32)>,
        kimi_presplit: bool,
    ) -> Result<Self, ModelError> {
        let ranks = load_ranks(ranks_path)?;
        Self::from_ranks(ranks_path, ranks, pattern, specials, kimi_presplit)
    }

    pub(crate) fn from_ranks(
        ranks_path: &Path,
        ranks: FxHashMap<Vec<u8>, u32>,
        pattern: &str,
        specials: Vec<(String, u32)>,
        kimi_presplit: bool,
    ) -> Result<Self, ModelError> {
        let file_error = |message: String| ModelError::File {
            path: ranks_path.display().to_string(),
            message,
        };
        let num_ranks = ranks.len();
        let max_rank = ranks.values().copied().max().unwrap_or(0) as usize;
        let mut decoder = vec![Vec::new(); max_rank + 1];
        for (bytes, &rank) in &ranks {
            decoder[rank as usize] = bytes.clone();
        }
        let (special_by_text, special_by_id) =
            special_tables(&specials, &decoder).map_err(file_error)?;
        let mut special_literals: Vec<(u32, String)> =
            specials.iter().map(|(s, i)| (*i, s.clone())).collect();
        special_literals.sort();
        let byte_level = byte_level_alphabet();
        let byte_level_to_id = ranks
            .iter()
            .map(|(bytes, &rank)| {
                let spelled: String = bytes.iter().map(|&b| byte_level[b as usize]).collect();
                (spelled, rank)
            })
            .collect();
        let vocab_size = specials
            .iter()
            .map(|(_, id)| *id as usize + 1)
            .chain([max_rank + 1])
            .max()
            .unwrap_or(num_ranks);
        let mut special_first_bytes = [false; 256];
        for literal in special_by_text.keys() {
            if let Some(&b) = literal.as_bytes().first() {
                special_first_bytes[b as usize] = true;
            }
        }
        let fast = FastSplitter::new(pattern).and_then(|splitter| {
            let specials = match special_by_text.is_empty() {
                true => None,
                false => Some(Literals::new(&special_by_text)?),
            };
            Some(FastEncoder {
                splitter,
                ranks: ranks.clone(),
                specials,
                pairs: std::sync::OnceLock::new(),
                states: StatePool::new(EncodeState::default),
            })
        });
        let special_encoder: FxHashMap<String, u32> = special_by_text.clone();
        let bpe = CoreBPE::new(ranks, special_encoder, pattern)
            .map_err(|e| file_error(format!("cannot build the BPE with the split pattern: {e}")))?;
        Ok(Self {
            bpe,
            fast,
            decoder,
            special_by_text,
            special_by_id,
            special_literals: special_literals.into_iter().map(|(_, s)| s).collect(),
            byte_level_to_id,
            special_first_bytes,
            kimi_presplit,
            vocab_size,
        })
    }

    /// Kimi's tokenizer from its loaded ranks: `KIMI_PATTERN` + ids `ranks..ranks+256` named
    /// from `added_tokens` (`id → literal`), the rest `<|reserved_token_N|>`, with pre-splitting.
    pub fn kimi(
        ranks_path: &Path,
        ranks: FxHashMap<Vec<u8>, u32>,
        added_tokens: &FxHashMap<u32, String>,
    ) -> Result<Self, ModelError> {
        let num_base = ranks.len() as u32;
        let specials = (num_base..num_base + KIMI_NUM_SPECIAL as u32)
            .map(|id| {
                let literal = added_tokens
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| format!("<|reserved_token_{id}|>"));
                (literal, id)
            })
            .collect();
        Self::from_ranks(ranks_path, ranks, KIMI_PATTERN, specials, true)
    }

    /// Encode with special-token literals recognized (`allowed_special="all"`).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.encode_pieces(text, true)
    }

    /// Encode with special-token literals as plain text (`disallowed_special=()`).
    pub fn encode_ordinary(&self, text: &str) -> Vec<u32> {
        self.encode_pieces(text, false)
    }

    fn encode_pieces(&self, text: &str, with_specials: bool) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        let Some(fast) = &self.fast else {
            // A piece holding no byte that starts a literal holds no literal: skip the per-call
            // set of allowed literals tiktoken-rs builds.
            let may_hold_literal = |piece: &str| {
                with_specials && piece.bytes().any(|b| self.special_first_bytes[b as usize])
            };
            self.for_each_piece(text, |piece| match may_hold_literal(piece) {
                true => ids.extend(self.bpe.encode_with_special_tokens(piece)),
                false => ids.extend(self.bpe.encode_ordinary(piece)),
            });
            return ids;
        };
        self.encode_fast(fast, text, with_specials, &mut fast.states.get())
    }

    /// [`TiktokenModel::encode`] without the word cache: what the cached path must equal.
    #[cfg(test)]
    pub(crate) fn encode_uncached(&self, text: &str) -> Option<Vec<u32>> {
        let mut state = EncodeState {
            words: super::word_cache::WordCache::disabled(),
            symbols: Vec::new(),
            stretches: super::word_cache::WordCache::disabled(),
        };
        let fast = self.fast.as_ref()?;
        Some(self.encode_fast(fast, text, true, &mut state))
    }

    fn encode_fast(
        &self,
        fast: &FastEncoder,
        text: &str,
        with_specials: bool,
        state: &mut EncodeState,
    ) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        let literals = fast.specials.as_ref().filter(|_| with_specials);
        self.for_each_piece(text, |piece| {
            // As `CoreBPE::encode` with every special allowed: literals become ids, the text
            // between them is encoded on its own (the split pattern sees its end as the end).
            Literals::for_each_part(literals, piece, |part| match part {
                Part::Literal(id) => ids.push(id),
                Part::Text(stretch) => fast.encode_ordinary(&self.bpe, stretch, state, &mut ids),
            })
        });
        ids
    }

    /// Encode with tiktoken-rs's `CoreBPE` only (fancy-regex), bypassing the fast splitter:
    /// the reference the fast path is tested against, and the benchmark's baseline.
    pub fn encode_with_core_bpe(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        self.for_each_piece(text, |piece| {
            ids.extend(self.bpe.encode_with_special_tokens(piece))
        });
        ids
    }

    /// Whether a text of `len` bytes is encoded as its stretches between special literals, each
    /// on its own: always, but for Kimi only below the length at which Python cuts the text
    /// into chunks first ([`TiktokenModel::for_each_piece`]).
    pub fn splits_at_literals_first(&self, len: usize) -> bool {
        !self.kimi_presplit || len <= KIMI_MAX_RUN_CHARS
    }

    /// The narrowest stretch `[start, end)` of `text` (which holds no special literal) around
    /// byte `at` whose pieces are all that whitespace inserted at `at` can change: `text` and
    /// the text with the insert split alike before `start` and after `end`.
    ///
    /// Kimi's pattern puts a piece boundary before any whitespace other than a line break that
    /// follows a non-whitespace character: only its whitespace runs hold whitespace after another
    /// character, the optional prefix of a word or of punctuation comes first, and punctuation
    /// runs end in line breaks only. The pieces before such a boundary are decided by the
    /// character after them at most, so a boundary before `at` keeps everything before it, and
    /// one after `at` everything after it. Other patterns: the whole text.
    pub fn insert_window(&self, text: &str, at: usize) -> (usize, usize) {
        if !self.kimi_presplit {
            return (0, text.len());
        }
        let starts_piece = |r: usize| {
            let before = text[..r].chars().next_back();
            let here = text[r..].chars().next();
            matches!((before, here), (Some(b), Some(h))
                if !b.is_whitespace() && h.is_whitespace() && h != '\r' && h != '\n')
        };
        let start = text[..at]
            .char_indices()
            .rev()
            .map(|(r, _)| r)
            .find(|&r| r > 0 && starts_piece(r))
            .unwrap_or(0);
        let end = text[at..]
            .char_indices()
            .map(|(i, _)| at + i)
            .find(|&e| e > at && starts_piece(e))
            .unwrap_or(text.len());
        (start, end)
    }

    /// Whether encoding runs on the fast splitter.
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// Call `f` on each piece Python encodes separately: the whole text, or for Kimi the
    /// 400,000-char chunks cut further by `_split_whitespaces_or_nonwhitespaces`.
    fn for_each_piece(&self, text: &str, mut f: impl FnMut(&str)) {
        // A run longer than 25,000 chars needs more than 25,000 bytes: short texts pass whole.
        if !self.kimi_presplit || text.len() <= KIMI_MAX_RUN_CHARS {
            if !text.is_empty() {
                f(text);
            }
            return;
        }
        for chunk in char_chunks(text, KIMI_CHUNK_CHARS) {
            split_whitespaces_or_nonwhitespaces(chunk, KIMI_MAX_RUN_CHARS, &mut f);
        }
    }

    /// Raw bytes of the ids; an unknown id is an error.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, u32> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id).ok_or(id)?);
        }
        Ok(out)
    }

    /// The bytes of one token (ordinary or special).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        match self.decoder.get(id as usize) {
            Some(bytes) if !bytes.is_empty() => Some(bytes),
            _ => self.special_by_id.get(&id).map(|s| s.as_bytes()),
        }
    }

    /// Special literal, or the byte-level spelling of an ordinary token.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.special_by_text
            .get(token)
            .or_else(|| self.byte_level_to_id.get(token))
            .copied()
    }

    /// Special literal, or the byte-level spelling (`Ġ` for space, …) of an ordinary token.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        if let Some(literal) = self.special_by_id.get(&id) {
            return Some(literal.clone());
        }
        let bytes = self.decoder.get(id as usize).filter(|b| !b.is_empty())?;
        let alphabet = byte_level_alphabet();
        Some(bytes.iter().map(|&b| alphabet[b as usize]).collect())
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    pub fn special_tokens(&self) -> &[String] {
        &self.special_literals
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.special_by_id.contains_key(&id)
    }
}

/// Fast encoding: [`Literals`], [`FastSplitter`], the word cache, then the rank lookup or the
/// byte-pair merge.
struct FastEncoder {
    splitter: FastSplitter,
    ranks: FxHashMap<Vec<u8>, u32>,
    /// The special literals, or `None` without specials.
    specials: Option<Literals>,
    /// For long pieces: every split of a token into two tokens → (its rank, its rank), built on
    /// the first long piece (about 1M entries for Kimi, so not at load).
    pairs: std::sync::OnceLock<FxHashMap<(u32, u32), (u32, u32)>>,
    /// Per-thread word cache and merge scratch, reused across calls.
    states: StatePool,
}

impl FastEncoder {
    fn encode_ordinary(
        &self,
        bpe: &CoreBPE,
        text: &str,
        state: &mut EncodeState,
        ids: &mut Vec<u32>,
    ) {
        // A stretch seen before (mostly a word and the space before it) is not split again.
        let EncodeState {
            words, stretches, ..
        } = state;
        self.splitter.for_each_stretch(text, |stretch| {
            stretches.encode(stretch.as_bytes(), ids, |_, ids| {
                self.splitter.for_each_piece(stretch, |piece| {
                    words.encode(piece.as_bytes(), ids, |_, ids| {
                        self.encode_piece(bpe, piece, ids)
                    })
                })
            })
        });
    }

    /// The ids of one piece, without the cache.
    fn encode_piece(&self, bpe: &CoreBPE, piece: &str, ids: &mut Vec<u32>) {
        let bytes = piece.as_bytes();
        match self.ranks.get(bytes) {
            Some(&id) => ids.push(id),
            // tiktoken-rs exports only the quadratic merge (`byte_pair_split`), fine for
            // short pieces. Long ones (and a lone byte missing from the ranks) go to
            // `CoreBPE`, whose split pattern returns a whole piece unchanged (no alternative
            // can match a longer or preferred prefix of a match in isolation), so its ids
            // are exactly the merge of the piece, computed with its heap-based merge.
            None if (2..100).contains(&bytes.len()) => ids.extend(
                tiktoken_rs::byte_pair_split(bytes, &self.ranks)
                    .into_iter()
                    .filter_map(|part| self.ranks.get(part).copied()),
            ),
            // Long pieces: the heap merge over id pairs (see `bpe::merge_long`), which
            // hashes two ids per lookup where `CoreBPE` hashes a byte slice with SipHash.
            // Every byte must be a token for the parts to be tokens; if one is not, CoreBPE.
            None => {
                let symbols: Option<Vec<u32>> = bytes
                    .iter()
                    .map(|b| self.ranks.get(std::slice::from_ref(b)).copied())
                    .collect();
                match symbols {
                    Some(symbols) if symbols.len() >= 2 => {
                        let pairs = self.pairs.get_or_init(|| token_pairs(&self.ranks));
                        super::bpe::merge_long(&symbols, pairs, ids);
                    }
                    _ => ids.extend(bpe.encode_ordinary(piece)),
                }
            }
        }
    }
}

/// Every way to write a token as two tokens: `(left, right)` → (rank, rank) of the whole. The
/// byte-pair merge joins adjacent parts exactly when their concatenation has a rank, and parts
/// are always tokens, so this map answers every question the merge asks.
fn token_pairs(ranks: &FxHashMap<Vec<u8>, u32>) -> FxHashMap<(u32, u32), (u32, u32)> {
    let mut pairs = FxHashMap::default();
    for (bytes, &rank) in ranks {
        for cut in 1..bytes.len() {
            if let (Some(&left), Some(&right)) =
                (ranks.get(&bytes[..cut]), ranks.get(&bytes[cut..]))
            {
                pairs.insert((left, right), (rank, rank));
            }
        }
    }
    pairs
}

/// Python's `str.isspace()`: Unicode `White_Space` plus the information separators
/// U+001C..U+001F (bidirectional class B/S), which Rust's `char::is_whitespace` leaves out.
/// Checked against CPython 3.11 over every code point.
fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text[i:i+n]` for `i in range(0, len(text), n)`, counting chars as Python does.
fn char_chunks(text: &str, n: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest
            .char_indices()
            .nth(n)
            .map_or(rest.len(), |(byte, _)| byte);
        let (chunk, tail) = rest.split_at(cut);
        rest = tail;
        Some(chunk)
    })
}

/// `TikTokenTokenizer._split_whitespaces_or_nonwhitespaces`, line for line: cut before the
/// char that would make a run of same-kind (space / non-space) chars longer than `max_run`.
fn split_whitespaces_or_nonwhitespaces(s: &str, max_run: usize, f: &mut impl FnMut(&str)) {
    let mut chars = s.char_indices();
    let Some((_, first)) = chars.clone().next() else {
        f(s);
        return;
    };
    let mut run_len = 0usize;
    let mut run_is_space = python_isspace(first);
    let mut slice_start = 0usize;
    for (byte, c) in &mut chars {
        let is_space = python_isspace(c);
        if run_is_space ^ is_space {
            run_len = 1;
            run_is_space = is_space;
        } else {
            run_len += 1;
            if run_len > max_run {
                f(&s[slice_start..byte]);
                slice_start = byte;
                run_len = 1;
            }
        }
    }
    f(&s[slice_start..]);
}

/// Special literal → id, and id → literal.
type SpecialTables = (FxHashMap<String, u32>, FxHashMap<u32, String>);

/// The special tokens' tables; `Err` when a literal is empty, an id is already an ordinary rank
/// (`decoder` has bytes for it), or either side is defined twice.
fn special_tables(
    specials: &[(String, u32)],
    decoder: &[Vec<u8>],
) -> Result<SpecialTables, String> {
    let mut special_by_text = FxHashMap::default();
    let mut special_by_id = FxHashMap::default();
    for (literal, id) in specials {
        if literal.is_empty() {
            return Err(format!(
                "special token id {id} has an empty literal; check added_tokens_decoder"
            ));
        }
        if decoder
            .get(*id as usize)
            .is_some_and(|bytes| !bytes.is_empty())
        {
            return Err(format!(
                "special token {literal:?} has id {id}, which is already an ordinary rank; \
                 check added_tokens_decoder in tokenizer_config.json"
            ));
        }
        if special_by_text.insert(literal.clone(), *id).is_some()
            || special_by_id.insert(*id, literal.clone()).is_some()
        {
            return Err(format!(
                "special token {literal:?} (id {id}) is defined twice; \
                 check added_tokens_decoder in tokenizer_config.json"
            ));
        }
    }
    Ok((special_by_text, special_by_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pieces(s: &str, max_run: usize) -> Vec<String> {
        let mut out = Vec::new();
        split_whitespaces_or_nonwhitespaces(s, max_run, &mut |p| out.push(p.to_string()));
        out
    }

    #[test]
    fn split_matches_python_reference_cases() {
        // Expected values computed with the Python function from tokenization_kimi.py.
        assert_eq!(pieces("", 3), vec![""]);
        assert_eq!(pieces("abcd", 3), vec!["abc", "d"]);
        assert_eq!(pieces("ab  cdefgh", 3), vec!["ab  cde", "fgh"]);
        assert_eq!(pieces("    x", 3), vec!["   ", " x"]);
        assert_eq!(
            pieces("\u{1c}\u{1c}\u{1c}\u{1c}", 3),
            vec!["\u{1c}\u{1c}\u{1c}", "\u{1c}"]
        );
        assert_eq!(pieces("ééééé", 2), vec!["éé", "éé", "é"]);
    }

    #[test]
    fn chunks_count_chars_not_bytes() {
        let chunks: Vec<&str> = char_chunks("ééé", 2).collect();
        assert_eq!(chunks, vec!["éé", "é"]);
        assert_eq!(char_chunks("", 2).count(), 0);
    }

    #[test]
    fn python_isspace_matches_cpython_table() {
        // The full set of code points where CPython 3.11 `str.isspace()` is true.
        let cpython: &[u32] = &[
            0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000,
            0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028,
            0x2029, 0x202f, 0x205f, 0x3000,
        ];
        let ours: Vec<u32> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| python_isspace(c))
            .map(|c| c as u32)
            .collect();
        assert_eq!(ours, cpython);
    }

    /// Kimi's tokenizer, or `None` when the shared assets are absent.
    fn kimi() -> Option<&'static crate::model::Tokenizer> {
        static KIMI: std::sync::OnceLock<Option<crate::model::Tokenizer>> =
            std::sync::OnceLock::new();
        KIMI.get_or_init(|| {
            let root = crate::model::assets::assets_root()?;
            crate::model::Tokenizer::from_dir(&root.join("kimi-k2.5")).ok()
        })
        .as_ref()
    }

    /// The literals one overlapping pass finds are those `contains` finds, in the tokenizer's
    /// order: texts holding literals, literals inside literals' text, prefixes of literals.
    #[test]
    fn special_tokens_in_is_contains_on_each() {
        let Some(kimi) = kimi() else { return };
        let tokens = kimi.special_tokens();
        let mut texts = vec![String::new(), "plain <| [E".to_string()];
        for (i, t) in tokens.iter().enumerate().step_by(7) {
            let other = &tokens[(i * 31 + 5) % tokens.len()];
            texts.push(format!("a{t}b{other}{t}"));
            texts.push(format!("{}{other}", &t[..t.len() / 2]));
        }
        for text in &texts {
            let want: Vec<&str> = tokens
                .iter()
                .filter(|t| !t.is_empty() && text.contains(t.as_str()))
                .map(String::as_str)
                .collect();
            assert_eq!(kimi.special_tokens_in(text), want, "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The word cache changes nothing: cached (cold, warm, then holding every piece) ==
        /// uncached == tiktoken-rs `CoreBPE`.
        #[test]
        fn kimi_cached_equals_uncached_and_core_bpe(
            parts in prop::collection::vec(prop_oneof![
                any::<String>(),
                prop::sample::select(vec![
                    " ", "  ", "\t", "\n", "\r\n", " \n ", "\u{a0}", "\u{3000}", "\u{1c}",
                    "'s", "'LL", "中文", "é", "\u{301}", "1234", "?!", "<|im_end|>", "<think>",
                    "[EOS]", "<|", "😀", "Ab", "ABC",
                ]).prop_map(str::to_string),
            ], 0..12)
        ) {
            let Some(kimi) = kimi() else { return Ok(()) };
            let Some(model) = kimi.tiktoken() else { panic!("Kimi is a tiktoken model") };
            let text = parts.concat();
            let want = model.encode_with_core_bpe(&text);
            prop_assert_eq!(&model.encode(&text), &want);
            prop_assert_eq!(&model.encode(&text), &want);
            prop_assert_eq!(model.encode_uncached(&text), Some(want));
        }
    }
}
