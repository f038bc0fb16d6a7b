//! A fast path for byte-level BPE `tokenizer.json` models (Qwen3, DeepSeek-V3, GPT-2 style).
//!
//! The `tokenizers` crate spends most of an encode in its generic machinery (offsets,
//! `NormalizedString` alignments, per-piece allocations), not in the BPE. For the common layout
//! — added tokens matched whole, an identity-on-ASCII normalizer, a sequence of `Split`
//! (`Isolated`) regexes, a `ByteLevel` pre-tokenizer without its own regex, and a plain BPE model
//! — the same ids come from: split on added-token literals (aho-corasick, [`Literals`]),
//! normalize, split with the regexes on `regex-automata` DFAs ([`FastSplitter`]), then merge
//! bytes by merge rank.
//!
//! Most of the pieces of chat text repeat, so each thread keeps a [`WordCache`] of piece → ids
//! per encoder ([`EncodeState`], pooled like `regex-automata`'s own caches), and a stretch whose
//! normalization is the identity (Unicode's quick check says so) skips `NormalizedString`.
//!
//! [`FastBpe::from_json`] accepts only that layout and returns `None` for anything else (the
//! caller then keeps the `tokenizers` crate). Exactness is checked against Python on the parity
//! corpora (`tests/tokenize.rs`, `tests/render.rs`) and against the `tokenizers` crate by
//! property tests, with the word cache and without it.

use regex_automata::util::pool::Pool;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tokenizers::{NormalizedString, Normalizer as _};
use unicode_normalization_alignments::{
    is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized,
};

use super::split::{FastSplitter, Literals, Part};
use super::word_cache::WordCache;

/// Pieces up to this many bytes merge with the simple quadratic scan (no allocation beyond the
/// symbol list); longer ones with the heap, as Hugging Face's `Word::merge_all`.
const SHORT_PIECE: usize = 48;

pub(crate) struct FastBpe {
    /// Added tokens matched on the raw text (`normalized: false`), then, in the stretches
    /// between them, those matched after normalization (`normalized: true`), as
    /// `AddedVocabulary::extract_and_normalize` does. `None` when the set is empty.
    raw_added: Option<Literals>,
    normalized_added: Option<Literals>,
    /// The normalizer (only NFC/NFKC/NFD/NFKD or none, all the identity on ASCII text), and
    /// the normal forms it applies in order (empty: the identity).
    normalizer: Option<tokenizers::NormalizerWrapper>,
    forms: Vec<NormalForm>,
    splitters: Vec<FastSplitter>,
    /// Per-thread caches, reused across calls.
    states: StatePool,
    /// Vocabulary id of each single byte (its byte-level char).
    byte_ids: [u32; 256],
    /// `(left id, right id)` → `(merge rank, merged id)`.
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    /// Raw-byte spelling → id; used whole only with `ignore_merges`.
    vocab: FxHashMap<Vec<u8>, u32>,
    ignore_merges: bool,
}

impl FastBpe {
    /// Build from the parsed `tokenizer.json` and the loaded tokenizer (for its added tokens
    /// and normalizer); `None` when the layout is not the one this path reproduces.
    pub(crate) fn from_json(json: &Value, tokenizer: &tokenizers::Tokenizer) -> Option<Self> {
        let (normalizer, forms) = match json.get("normalizer") {
            None | Some(Value::Null) => (None, Vec::new()),
            Some(n) => (tokenizer.get_normalizer().cloned(), normal_forms(n)?),
        };
        let splitters = split_patterns(json.get("pre_tokenizer")?)?
            .iter()
            .map(|p| FastSplitter::new(p))
            .collect::<Option<Vec<_>>>()?;
        let model = json.get("model")?;
        let plain = model.get("type")?.as_str()? == "BPE"
            && model.get("dropout").is_none_or(Value::is_null)
            && model.get("byte_fallback").is_none_or(|v| v == false)
            && empty_or_null(model.get("continuing_subword_prefix"))
            && empty_or_null(model.get("end_of_word_suffix"));
        if !plain {
            return None;
        }
        let ignore_merges = model.get("ignore_merges").and_then(Value::as_bool) == Some(true);
        let decoder = byte_level_decoder();
        let mut by_spelling: FxHashMap<&str, u32> = FxHashMap::default();
        let mut vocab = FxHashMap::default();
        for (token, id) in model.get("vocab")?.as_object()? {
            let id = u32::try_from(id.as_u64()?).ok()?;
            by_spelling.insert(token.as_str(), id);
            // A token with a char outside the byte-level alphabet can never come out of the
            // byte-level pre-tokenizer: leave it out of the byte lookup.
            let bytes: Option<Vec<u8>> = token.chars().map(|c| decoder.get(&c).copied()).collect();
            if let Some(bytes) = bytes {
                vocab.insert(bytes, id);
            }
        }
        let mut byte_ids = [0u32; 256];
        for (b, c) in byte_level_alphabet().iter().enumerate() {
            // Every byte must be a token, or Hugging Face would emit `unk` / drop it.
            byte_ids[b] = *by_spelling.get(c.to_string().as_str())?;
        }
        let mut merges = FxHashMap::default();
        for (rank, merge) in model.get("merges")?.as_array()?.iter().enumerate() {
            let (left, right) = match merge {
                Value::String(s) => s.split_once(' ')?,
                Value::Array(pair) if pair.len() == 2 => (pair[0].as_str()?, pair[1].as_str()?),
                _ => return None,
            };
            let merged = by_spelling.get(format!("{left}{right}").as_str())?;
            let pair = (*by_spelling.get(left)?, *by_spelling.get(right)?);
            // A pair listed twice: the later rank wins, as in `BPE::from_builder`'s map.
            merges.insert(pair, (u32::try_from(rank).ok()?, *merged));
        }
        let mut raw = FxHashMap::default();
        let mut normalized = FxHashMap::default();
        for (id, token) in tokenizer.get_added_tokens_decoder() {
            if token.lstrip || token.rstrip || token.single_word || token.content.is_empty() {
                return None;
            }
            let set = if token.normalized {
                &mut normalized
            } else {
                &mut raw
            };
            set.insert(token.content.clone(), id);
        }
        // `Some(None)` for no literals; `None` (no fast path) if a searcher cannot be built.
        let literals = |set: &FxHashMap<String, u32>| match set.is_empty() {
            true => Some(None),
            false => Literals::new(set).map(Some),
        };
        Some(Self {
            raw_added: literals(&raw)?,
            normalized_added: literals(&normalized)?,
            normalizer,
            forms,
            splitters,
            states: Pool::new(EncodeState::default),
            byte_ids,
            merges,
            vocab,
            ignore_merges,
        })
    }

    /// Encode with added-token literals recognized (`add_special_tokens=False`).
    pub(crate) fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.encode_with(text, &mut self.states.get())
    }

    /// [`FastBpe::encode`] without the word cache: what the cached path must equal.
    #[cfg(test)]
    pub(crate) fn encode_uncached(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut state = EncodeState {
            words: WordCache::disabled(),
            symbols: Vec::new(),
            stretches: WordCache::disabled(),
        };
        self.encode_with(text, &mut state)
    }

    fn encode_with(&self, text: &str, state: &mut EncodeState) -> Result<Vec<u32>, String> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 1);
        let mut err = None;
        Literals::for_each_part(self.raw_added.as_ref(), text, |part| match part {
            Part::Literal(id) => ids.push(id),
            Part::Text(stretch) => {
                let normalized = match self.normalize(stretch) {
                    Ok(n) => n,
                    Err(e) => {
                        err.get_or_insert(e);
                        return;
                    }
                };
                let parts = |part| match part {
                    Part::Literal(id) => ids.push(id),
                    Part::Text(stretch) => self.encode_text(stretch, 0, state, &mut ids),
                };
                Literals::for_each_part(self.normalized_added.as_ref(), &normalized, parts);
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(ids),
        }
    }

    /// The normalized text. Only text some normal form could change pays for
    /// `NormalizedString`: ASCII and text every form's quick check calls normalized pass as is.
    fn normalize<'t>(&self, text: &'t str) -> Result<std::borrow::Cow<'t, str>, String> {
        // The quick check treats an ASCII char as a fresh start, so an ASCII prefix changes
        // nothing in its answer: start at the first non-ASCII byte (a char boundary).
        let Some(first) = text.bytes().position(|b| !b.is_ascii()) else {
            return Ok(text.into());
        };
        let rest = &text[first..];
        if self
            .forms
            .iter()
            .all(|form| form.quick_check(rest) == IsNormalized::Yes)
        {
            return Ok(text.into());
        }
        match &self.normalizer {
            Some(normalizer) => {
                let mut normalized = NormalizedString::from(text);
                normalizer
                    .normalize(&mut normalized)
                    .map_err(|e| format!("normalizer: {e}"))?;
                Ok(normalized.get().to_string().into())
            }
            None => Ok(text.into()),
        }
    }

    /// Pre-tokenize with splitter `level` and the ones after it, then merge each piece.
    fn encode_text(&self, text: &str, level: usize, state: &mut EncodeState, ids: &mut Vec<u32>) {
        match self.splitters.get(level) {
            Some(splitter) => splitter.for_each_piece_isolated(text, |piece| {
                self.encode_text(piece, level + 1, state, ids)
            }),
            None => match text.as_bytes() {
                [] => {}
                &[byte] => ids.push(self.byte_ids[byte as usize]),
                bytes => {
                    let EncodeState { words, symbols, .. } = state;
                    words.encode(bytes, ids, |bytes, ids| {
                        self.merge_piece(bytes, symbols, ids)
                    });
                }
            },
        }
    }

    /// The ids of one piece of two or more bytes, without the cache (see [`WordCache`]).
    fn merge_piece(&self, bytes: &[u8], symbols: &mut Vec<u32>, ids: &mut Vec<u32>) {
        if self.ignore_merges {
            if let Some(&id) = self.vocab.get(bytes) {
                ids.push(id);
                return;
            }
        }
        symbols.clear();
        symbols.extend(bytes.iter().map(|&b| self.byte_ids[b as usize]));
        if bytes.len() <= SHORT_PIECE {
            self.merge_short(symbols);
            ids.extend_from_slice(symbols);
        } else {
            merge_long(symbols, &self.merges, ids);
        }
    }

    /// Repeatedly merge the adjacent pair of lowest rank (leftmost on ties: ranks are unique
    /// per pair, so a tie is the same pair twice and the left one goes first).
    fn merge_short(&self, symbols: &mut Vec<u32>) {
        loop {
            let mut best: Option<(u32, usize, u32)> = None;
            for i in 0..symbols.len().saturating_sub(1) {
                if let Some(&(rank, merged)) = self.merges.get(&(symbols[i], symbols[i + 1])) {
                    if best.is_none_or(|(r, _, _)| rank < r) {
                        best = Some((rank, i, merged));
                    }
                }
            }
            let Some((_, i, merged)) = best else {
                return;
            };
            symbols[i] = merged;
            symbols.remove(i + 1);
        }
    }
}

/// The byte-pair merge of a long piece: repeatedly merge the adjacent pair of lowest rank,
/// leftmost on ties — Hugging Face's `Word::merge_all` without dropout, and with `merges` =
/// every split of a tiktoken token into two tokens → (its rank, its id), tiktoken's merge.
///
/// `O(n log n)` over a linked list of symbols and a min-heap of packed `(rank, position)` keys
/// (8 bytes each). Each position remembers the rank and result of its current candidate, so a
/// popped key is stale exactly when that rank changed, and no map lookup is needed to tell.
/// Lookups go through a small direct-mapped [`PairCache`] first: the long pieces (runs of one
/// character, whitespace, repeated words) ask for the same few pairs thousands of times, and
/// the full pair map, megabytes large, misses the CPU cache on every lookup.
pub(crate) fn merge_long(
    symbols: &[u32],
    merges: &FxHashMap<(u32, u32), (u32, u32)>,
    ids: &mut Vec<u32>,
) {
    const NONE: u32 = u32::MAX;
    let n = symbols.len();
    let Ok(n32) = u32::try_from(n) else {
        // Four billion symbols in one piece: never from a real text; keep the answer exact.
        return merge_long_plain(symbols, merges, ids);
    };
    if n < 2 {
        ids.extend_from_slice(symbols);
        return;
    }
    let mut id = symbols.to_vec();
    // Neighbours in the list (`n32`: none on the right, `NONE`: none on the left).
    let mut next: Vec<u32> = (1..=n32).collect();
    let mut prev: Vec<u32> = (0..n32).map(|i| i.wrapping_sub(1)).collect();
    // The candidate merge of the pair starting at each live position: rank (`NONE`: none) and
    // the merged id.
    let mut rank = vec![NONE; n];
    let mut merged = vec![0u32; n];
    let mut cache = PairCache::new(merges);
    let mut heap: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(n);
    let key = |rank: u32, pos: usize| Reverse((u64::from(rank) << 32) | pos as u64);

    for pos in 0..n - 1 {
        if let Some((r, m)) = cache.get(id[pos], id[pos + 1]) {
            rank[pos] = r;
            merged[pos] = m;
            heap.push(key(r, pos));
        }
    }
    while let Some(Reverse(top)) = heap.pop() {
        let (top_rank, pos) = ((top >> 32) as u32, (top & u64::from(u32::MAX)) as usize);
        if rank[pos] != top_rank {
            continue; // stale: the pair at `pos` changed (or `pos` was merged away)
        }
        // Merge `pos` with its right neighbour, which exists since `pos` has a candidate.
        let right = next[pos] as usize;
        id[pos] = merged[pos];
        rank[right] = NONE;
        let after = next[right];
        next[pos] = after;
        if after < n32 {
            prev[after as usize] = pos as u32;
        }
        // The pairs that changed: (pos, after) and (left, pos).
        for at in [pos as u32, prev[pos]] {
            if at == NONE {
                continue;
            }
            let at = at as usize;
            let right = next[at];
            rank[at] = NONE;
            if right < n32 {
                if let Some((r, m)) = cache.get(id[at], id[right as usize]) {
                    rank[at] = r;
                    merged[at] = m;
                    heap.push(key(r, at));
                }
            }
        }
    }
    let mut pos = 0;
    while pos < n {
        ids.push(id[pos]);
        pos = next[pos] as usize;
    }
}

/// The quadratic merge (the rule [`merge_long`] implements, and what it is tested against).
fn merge_long_plain(
    symbols: &[u32],
    merges: &FxHashMap<(u32, u32), (u32, u32)>,
    ids: &mut Vec<u32>,
) {
    let mut symbols = symbols.to_vec();
    loop {
        let best = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(i, pair)| merges.get(&(pair[0], pair[1])).map(|&(r, m)| (r, i, m)))
            .min();
        let Some((_, i, merged)) = best else { break };
        symbols[i] = merged;
        symbols.remove(i + 1);
    }
    ids.extend_from_slice(&symbols);
}

/// A direct-mapped cache in front of the pair map: 1,024 entries (16 KiB, in L1), each the
/// last pair that hashed there and its answer. Exact: a miss asks the map.
struct PairCache<'m> {
    merges: &'m FxHashMap<(u32, u32), (u32, u32)>,
    /// `(left << 32 | right, answer)`; `u64::MAX` marks an empty slot (no id is `u32::MAX`
    /// twice over: ids index vocabularies far smaller).
    slots: Vec<(u64, Option<(u32, u32)>)>,
}

impl<'m> PairCache<'m> {
    const BITS: u32 = 10;

    fn new(merges: &'m FxHashMap<(u32, u32), (u32, u32)>) -> Self {
        Self {
            merges,
            slots: vec![(u64::MAX, None); 1 << Self::BITS],
        }
    }

    #[inline]
    fn get(&mut self, left: u32, right: u32) -> Option<(u32, u32)> {
        let pair = (u64::from(left) << 32) | u64::from(right);
        // Fibonacci hashing: the top bits of the product.
        let slot = (pair.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - Self::BITS)) as usize;
        let entry = &mut self.slots[slot];
        if entry.0 != pair {
            *entry = (pair, self.merges.get(&(left, right)).copied());
        }
        entry.1
    }
}

/// What a thread keeps between encodes with one encoder: the word cache and merge scratch.
/// Taken from the encoder's [`StatePool`] for one call.
#[derive(Default)]
pub(crate) struct EncodeState {
    pub(crate) words: WordCache,
    pub(crate) symbols: Vec<u32>,
    /// Whole stretches ([`FastSplitter::for_each_stretch`](super::split::FastSplitter)) → ids.
    pub(crate) stretches: WordCache,
}

/// `regex-automata`'s pool: the owning thread takes its value without locking, other threads
/// (rayon's) from a small set of stacks.
pub(crate) type StatePool = Pool<EncodeState, fn() -> EncodeState>;

fn empty_or_null(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// A Unicode normal form a `tokenizer.json` normalizer applies.
#[derive(Clone, Copy)]
enum NormalForm {
    Nfc,
    Nfkc,
    Nfd,
    Nfkd,
}

impl NormalForm {
    /// Unicode's quick check with the tables the `tokenizers` crate normalizes with: `Yes`
    /// means normalizing leaves `text` unchanged.
    fn quick_check(self, text: &str) -> IsNormalized {
        match self {
            Self::Nfc => is_nfc_quick(text.chars()),
            Self::Nfkc => is_nfkc_quick(text.chars()),
            Self::Nfd => is_nfd_quick(text.chars()),
            Self::Nfkd => is_nfkd_quick(text.chars()),
        }
    }
}

/// The normal forms of a normalizer made only of them (sequences included, the empty one too,
/// all the identity on ASCII text); `None` for any other normalizer.
fn normal_forms(n: &Value) -> Option<Vec<NormalForm>> {
    match n.get("type")?.as_str()? {
        "NFC" => Some(vec![NormalForm::Nfc]),
        "NFKC" => Some(vec![NormalForm::Nfkc]),
        "NFD" => Some(vec![NormalForm::Nfd]),
        "NFKD" => Some(vec![NormalForm::Nfkd]),
        "Sequence" => {
            let parts = n.get("normalizers")?.as_array()?;
            let forms = parts.iter().map(normal_forms).collect::<Option<Vec<_>>>()?;
            Some(forms.concat())
        }
        _ => None,
    }
}

/// The regexes of `Sequence[Split(Regex, Isolated, invert=false)…, ByteLevel(no prefix space,
/// no regex)]`, or `None` for any other pre-tokenizer.
fn split_patterns(pre: &Value) -> Option<Vec<String>> {
    let steps = match pre.get("type")?.as_str()? {
        "Sequence" => pre.get("pretokenizers")?.as_array()?.as_slice(),
        _ => std::slice::from_ref(pre),
    };
    let (last, splits) = steps.split_last()?;
    let byte_level = last.get("type")?.as_str()? == "ByteLevel"
        && last.get("add_prefix_space").and_then(Value::as_bool) == Some(false)
        && last.get("use_regex").and_then(Value::as_bool) == Some(false);
    if !byte_level {
        return None;
    }
    splits
        .iter()
        .map(|step| {
            let isolated = step.get("type")?.as_str()? == "Split"
                && step.get("behavior")?.as_str()? == "Isolated"
                && step.get("invert").and_then(Value::as_bool) == Some(false);
            if !isolated {
                return None;
            }
            step.get("pattern")?
                .get("Regex")?
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// Inverse of GPT-2's `bytes_to_unicode` ([`byte_level_alphabet`]), built once.
pub(crate) fn byte_level_decoder() -> &'static rustc_hash::FxHashMap<char, u8> {
    static DECODER: std::sync::OnceLock<rustc_hash::FxHashMap<char, u8>> =
        std::sync::OnceLock::new();
    DECODER.get_or_init(|| {
        byte_level_alphabet()
            .iter()
            .enumerate()
            .map(|(b, &c)| (c, b as u8))
            .collect()
    })
}

/// GPT-2's `bytes_to_unicode`: printable bytes map to themselves, the rest to U+0100 onwards.
pub(crate) fn byte_level_alphabet() -> &'static [char; 256] {
    static ALPHABET: std::sync::OnceLock<[char; 256]> = std::sync::OnceLock::new();
    ALPHABET.get_or_init(|| {
        let mut table = ['\0'; 256];
        let mut next = 256u32;
        for b in 0..=255u8 {
            let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
            table[b as usize] = if printable {
                char::from(b)
            } else {
                let c = char::from_u32(next).unwrap_or('\u{FFFD}');
                next += 1;
                c
            };
        }
        table
    })
}

#[cfg(test)]
mod tests {
    use super::{byte_level_alphabet, merge_long, merge_long_plain};
    use crate::model::assets::assets_root;
    use crate::model::Tokenizer;
    use proptest::prelude::*;
    use rustc_hash::FxHashMap;
    use std::sync::OnceLock;

    #[test]
    fn byte_level_alphabet_spells_space_as_g_dot() {
        assert_eq!(byte_level_alphabet()[b' ' as usize], 'Ġ');
        assert_eq!(byte_level_alphabet()[b'\n' as usize], 'Ċ');
        assert_eq!(byte_level_alphabet()[b'a' as usize], 'a');
    }

    /// Qwen3 (NFC, one split) and DeepSeek-V3 (three splits, normalized added tokens); `None`
    /// when the shared assets are absent.
    fn models() -> Option<&'static [Tokenizer; 2]> {
        static MODELS: OnceLock<Option<[Tokenizer; 2]>> = OnceLock::new();
        MODELS
            .get_or_init(|| {
                let root = assets_root()?;
                let load = |name: &str| Tokenizer::from_dir(&root.join(name)).ok();
                Some([load("qwen3")?, load("deepseek-v3")?])
            })
            .as_ref()
    }

    /// The fast path equals the `tokenizers` crate, with the word cache (cold or warmed by
    /// earlier cases, then holding every piece of `text`) and without it.
    fn same_as_hf_crate(text: &str) {
        let Some(models) = models() else { return };
        for model in models {
            let Some(fast) = model.fast_bpe() else {
                panic!("no fast path for {}", model.source().display());
            };
            let want = model.encode_with_hf_crate(text).and_then(Result::ok);
            assert_eq!(Some(model.encode(text)), want, "{text:?}");
            assert_eq!(Some(model.encode(text)), want, "{text:?} (cached)");
            assert_eq!(fast.encode_uncached(text).ok(), want, "{text:?} (uncached)");
        }
    }

    #[test]
    fn edge_cases_match_the_tokenizers_crate() {
        for text in [
            "",
            "hello world",
            "  leading and trailing  \n\n  ",
            "Ame\u{301}lie cafe\u{301} 한국어 Å Ω", // NFC changes these
            "数字12345678 日本語テキスト カタカナ",
            "<|im_start|>user\nhi<|im_end|><think></think><tool_call>",
            "<｜begin▁of▁sentence｜><｜User｜>x<｜Assistant｜>",
            &"a".repeat(300),
            &"ab ".repeat(200),
            &"🙂".repeat(40),
            &" ".repeat(100),
            "tabs\t\t\tand\r\n\r\nreturns\u{a0}\u{3000}x",
            "'s 'T 'Re can't I'LL",
        ] {
            same_as_hf_crate(text);
        }
    }

    /// A merge table over a 4-symbol alphabet where every pair and many longer runs merge,
    /// with ranks chosen so ties, overlaps and chains all happen.
    fn toy_merges() -> FxHashMap<(u32, u32), (u32, u32)> {
        let mut merges = FxHashMap::default();
        for (rank, (left, right)) in [
            (0, 0),
            (1, 1),
            (0, 1),
            (4, 4),
            (2, 3),
            (5, 5),
            (3, 3),
            (4, 0),
            (1, 0),
            (6, 2),
            (8, 8),
            (7, 1),
            (0, 2),
            (9, 3),
            (2, 2),
            (5, 6),
            (10, 4),
            (12, 12),
        ]
        .into_iter()
        .enumerate()
        {
            let rank = rank as u32;
            merges.insert((left, right), (rank * 7 % 19, 4 + rank));
        }
        merges
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The heap merge (with its pair cache) equals the plain quadratic merge.
        #[test]
        fn merge_long_equals_the_plain_merge(
            symbols in prop::collection::vec(0u32..4, 0..200),
            run in 0usize..300,
        ) {
            let merges = toy_merges();
            let mut symbols = symbols;
            symbols.extend(std::iter::repeat_n(0, run));
            let (mut fast, mut plain) = (Vec::new(), Vec::new());
            merge_long(&symbols, &merges, &mut fast);
            merge_long_plain(&symbols, &merges, &mut plain);
            prop_assert_eq!(fast, plain);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn random_text_matches_the_tokenizers_crate(
            text in "([a-zA-Z]{1,70}|[0-9]{1,9}|[ \t\n\r]{1,5}|[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}]{1,4}|<\\|im_end\\|>|'s|\u{301}){0,30}"
        ) {
            same_as_hf_crate(&text);
        }

        #[test]
        fn adversarial_unicode_matches_the_tokenizers_crate(
            parts in prop::collection::vec(prop_oneof![
                any::<String>(),
                prop::sample::select(vec![
                    " ", "  ", "\t", "\n", "\r\n", " \n ", "\u{a0}", "\u{3000}", "\u{2028}",
                    "'s", "'LL", "中文", "ｶﾀｶﾅ", "é", "e\u{301}", "\u{301}", "١٢٣", "1234", "?!",
                    "<|im_end|>", "<think>", "<｜User｜>", "<|", "😀", "Ⅻ", "\u{fb01}", "\u{212b}",
                ]).prop_map(str::to_string),
            ], 0..12)
        ) {
            same_as_hf_crate(&parts.concat());
        }
    }
}
