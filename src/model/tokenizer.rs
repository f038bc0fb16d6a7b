//! One tokenizer type over tiktoken rank files and Hugging Face `tokenizer.json`.
//!
//! Reconstruction, rendering and the simulator only need "text → the ids the serving stack
//! would produce" and back, so both backends hide behind one [`Tokenizer`]:
//! - `tiktoken.model` (Kimi): tiktoken-rs `CoreBPE` with Kimi's pattern, 256 special ids and
//!   pre-splitting, as `tokenization_kimi.py` does (see [`super::tiktoken`]);
//! - `tokenizer.json`: the `tokenizers` crate, encoding without the post-processor's special
//!   tokens (`add_special_tokens=False`, which `apply_chat_template` and the servers use for chat).
//!
//! Both normally encode on fast paths with the same ids (`bpe.rs`, `tiktoken.rs`: DFA splitting,
//! aho-corasick literal scan, a per-thread cache of piece → ids); the crates above remain the
//! fallback for layouts the fast paths do not cover, and the references they are tested against.
//!
//! In both, `encode` turns special-token literals in the text into their ids, as the serving
//! stacks do. "Special" here means every added token matched as a whole literal (Kimi's
//! `<think>` and Qwen's `<tool_call>` included, though their `special` flag is false).

use aho_corasick::{AhoCorasick, MatchKind};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::bpe::{self, FastBpe};
use super::tiktoken::{self, TiktokenModel};
use super::ModelError;

/// A model's tokenizer. Encoding recognizes special-token literals, as the serving stack does.
///
/// `Send + Sync`: load once, share with `Arc` across threads.
pub struct Tokenizer {
    backend: Backend,
    /// The file the vocabulary came from, for error messages.
    source: PathBuf,
    /// The special-token literals as one leftmost-longest searcher, built on first use of
    /// [`Tokenizer::special_spans`].
    special_search: OnceLock<SpecialSearch>,
    /// Every special literal, for [`Tokenizer::special_tokens_in`]: the overlapping searcher and
    /// each pattern's index in [`Tokenizer::special_tokens`] (`None`: it could not be built).
    contained_search: OnceLock<Option<(AhoCorasick, Vec<usize>)>>,
    /// A number no other tokenizer of this process has: the key of [`super::recent`]'s memo.
    uid: u64,
}

/// Every special-token literal in one searcher.
struct SpecialSearch {
    /// Leftmost-longest, as encoding matches literals (`None`: it could not be built).
    searcher: Option<AhoCorasick>,
    /// Some literal holds whitespace (inserting whitespace could then make or break one).
    any_whitespace: bool,
}

/// The next [`Tokenizer::uid`].
fn next_uid() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

enum Backend {
    Tiktoken(Box<TiktokenModel>),
    HuggingFace(Box<HfModel>),
}

struct HfModel {
    tokenizer: tokenizers::Tokenizer,
    /// The same tokenizer with `encode_special_tokens` on (transformers'
    /// `split_special_tokens=True`), built on first use of `encode_ordinary`.
    ordinary: OnceLock<tokenizers::Tokenizer>,
    /// Added tokens, id → literal, and literals in id order.
    added: FxHashMap<u32, String>,
    added_literals: Vec<String>,
    /// The decoder is GPT-2 byte-level, so token strings map back to raw bytes.
    byte_level: bool,
    /// Same ids as `tokenizer.encode` for byte-level BPE layouts it supports, several times
    /// faster (see [`super::bpe`]); `None` keeps the `tokenizers` crate.
    fast: Option<FastBpe>,
}

impl Tokenizer {
    /// Load from a model directory: `tiktoken.model` (+ `tokenizer_config.json` for the added
    /// tokens) or `tokenizer.json`.
    pub fn from_dir(dir: &Path) -> Result<Self, ModelError> {
        if !dir.is_dir() {
            return Err(ModelError::File {
                path: dir.display().to_string(),
                message: "not a directory; pass --model DIR (a Hugging Face-style model \
                          directory) or a known model name such as kimi-k2.5"
                    .into(),
            });
        }
        let config = read_tokenizer_config(&dir.join("tokenizer_config.json"))?;
        let tiktoken_path = dir.join("tiktoken.model");
        let json_path = dir.join("tokenizer.json");
        let says_tiktoken = config.as_ref().is_some_and(is_kimi_config);
        if tiktoken_path.is_file() && (says_tiktoken || !json_path.is_file()) {
            return Self::from_tiktoken_dir(&tiktoken_path, config.as_ref(), says_tiktoken);
        }
        if json_path.is_file() {
            return Self::from_tokenizer_json(&json_path);
        }
        Err(ModelError::File {
            path: dir.display().to_string(),
            message: "holds neither tokenizer.json nor tiktoken.model; point --model at a model \
                      directory that has one of them"
                .into(),
        })
    }

    fn from_tiktoken_dir(
        path: &Path,
        config: Option<&Value>,
        says_kimi: bool,
    ) -> Result<Self, ModelError> {
        let ranks = tiktoken::load_ranks(path)?;
        if !says_kimi && ranks.len() != tiktoken::KIMI_NUM_RANKS {
            return Err(ModelError::File {
                path: path.display().to_string(),
                message: format!(
                    "a tiktoken.model with {} ranks and no Kimi tokenizer_config.json: its split \
                     pattern and special tokens are unknown; build it with \
                     Tokenizer::from_tiktoken(path, pattern, specials)",
                    ranks.len()
                ),
            });
        }
        let added = config.map(added_tokens_decoder).unwrap_or_default();
        let model = TiktokenModel::kimi(path, ranks, &added)?;
        Ok(Self {
            backend: Backend::Tiktoken(Box::new(model)),
            source: path.to_path_buf(),
            special_search: OnceLock::new(),
            contained_search: OnceLock::new(),
            uid: next_uid(),
        })
    }

    /// A tiktoken encoding from a rank file, its split pattern and its special tokens
    /// (`literal → id`), for tiktoken models other than Kimi (no pre-splitting).
    pub fn from_tiktoken(
        path: &Path,
        pattern: &str,
        specials: Vec<(String, u32)>,
    ) -> Result<Self, ModelError> {
        let model = TiktokenModel::new(path, pattern, specials, false)?;
        Ok(Self {
            backend: Backend::Tiktoken(Box::new(model)),
            source: path.to_path_buf(),
            special_search: OnceLock::new(),
            contained_search: OnceLock::new(),
            uid: next_uid(),
        })
    }

    /// A Hugging Face `tokenizer.json`.
    pub fn from_tokenizer_json(path: &Path) -> Result<Self, ModelError> {
        let file_error = |message: String| ModelError::File {
            path: path.display().to_string(),
            message,
        };
        let tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            file_error(format!(
                "cannot load the Hugging Face tokenizer ({e}); check that the file is a complete \
                 tokenizer.json (re-download it, or pass --model with another directory)"
            ))
        })?;
        let mut added: Vec<(u32, String)> = tokenizer
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, token)| (id, token.content))
            .collect();
        added.sort();
        let json = read_json(path)?;
        let byte_level = json.get("decoder").is_some_and(decoder_is_byte_level);
        let fast = FastBpe::from_json(&json, &tokenizer);
        drop(json);
        Ok(Self {
            backend: Backend::HuggingFace(Box::new(HfModel {
                tokenizer,
                ordinary: OnceLock::new(),
                added_literals: added.iter().map(|(_, s)| s.clone()).collect(),
                added: added.into_iter().collect(),
                byte_level,
                fast,
            })),
            source: path.to_path_buf(),
            special_search: OnceLock::new(),
            contained_search: OnceLock::new(),
            uid: next_uid(),
        })
    }

    /// The tiktoken backend, when this is a tiktoken model (for tests and benchmarks that compare
    /// its fast path with tiktoken-rs's `CoreBPE`).
    pub fn tiktoken(&self) -> Option<&TiktokenModel> {
        match &self.backend {
            Backend::Tiktoken(model) => Some(model),
            Backend::HuggingFace(_) => None,
        }
    }

    /// The byte-level BPE fast path, for its tests.
    #[cfg(test)]
    pub(crate) fn fast_bpe(&self) -> Option<&FastBpe> {
        match &self.backend {
            Backend::HuggingFace(hf) => hf.fast.as_ref(),
            Backend::Tiktoken(_) => None,
        }
    }

    /// The vocabulary file this tokenizer was loaded from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Encode text; special-token literals become their special ids.
    ///
    /// Never fails for tiktoken and byte-level BPE vocabularies; for other Hugging Face models
    /// a failure is logged and yields no ids (use [`Tokenizer::try_encode`] to see it).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.try_encode(text).unwrap_or_else(|err| {
            tracing::error!("{err}");
            Vec::new()
        })
    }

    /// Encode text; special-token literals become their special ids. A long text encoded
    /// lately on this thread is not encoded again ([`super::recent`]).
    pub fn try_encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        super::recent::encode(self.uid, text, |text| self.encode_afresh(text))
    }

    fn encode_afresh(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        match &self.backend {
            Backend::Tiktoken(model) => Ok(model.encode(text)),
            Backend::HuggingFace(hf) => match &hf.fast {
                Some(fast) => fast
                    .encode(text)
                    .map_err(|e| ModelError::Tokenizer(format!("{}: {e}", self.source.display()))),
                None => self.hf_encode(&hf.tokenizer, text),
            },
        }
    }

    /// Encode with the `tokenizers` crate even when the fast byte-level BPE path exists: the
    /// reference that path is tested against, and the benchmark's baseline.
    pub fn encode_with_hf_crate(&self, text: &str) -> Option<Result<Vec<u32>, ModelError>> {
        match &self.backend {
            Backend::HuggingFace(hf) => Some(self.hf_encode(&hf.tokenizer, text)),
            Backend::Tiktoken(_) => None,
        }
    }

    /// Whether encoding runs on a fast path (tiktoken's DFA splitter, or the byte-level
    /// BPE path for `tokenizer.json`) rather than tiktoken-rs / the `tokenizers` crate.
    pub fn has_fast_path(&self) -> bool {
        match &self.backend {
            Backend::Tiktoken(model) => model.has_fast_path(),
            Backend::HuggingFace(hf) => hf.fast.is_some(),
        }
    }

    /// Encode text with special-token literals treated as plain text.
    ///
    /// tiktoken: every literal is plain text (`disallowed_special=()`). Hugging Face: added
    /// tokens flagged `special` are split (transformers' `split_special_tokens=True`); added
    /// tokens not flagged special still match whole, as in transformers.
    pub fn encode_ordinary(&self, text: &str) -> Vec<u32> {
        match &self.backend {
            Backend::Tiktoken(model) => model.encode_ordinary(text),
            Backend::HuggingFace(hf) => {
                let ordinary = hf.ordinary.get_or_init(|| {
                    let mut tokenizer = hf.tokenizer.clone();
                    tokenizer.set_encode_special_tokens(true);
                    tokenizer
                });
                self.hf_encode(ordinary, text).unwrap_or_else(|err| {
                    tracing::error!("{err}");
                    Vec::new()
                })
            }
        }
    }

    fn hf_encode(
        &self,
        tokenizer: &tokenizers::Tokenizer,
        text: &str,
    ) -> Result<Vec<u32>, ModelError> {
        tokenizer
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| ModelError::Tokenizer(format!("{}: {e}", self.source.display())))
    }

    /// Encode many texts on all cores; same order as `texts`.
    pub fn encode_batch(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        texts.par_iter().map(|text| self.encode(text)).collect()
    }

    /// Decode ids to text (lossy on invalid UTF-8; unknown ids are dropped, as Hugging Face does).
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.backend {
            Backend::Tiktoken(model) => {
                let bytes: Vec<u8> = ids
                    .iter()
                    .filter_map(|&id| model.token_bytes(id))
                    .flatten()
                    .copied()
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Backend::HuggingFace(hf) => hf.tokenizer.decode(ids, false).unwrap_or_else(|err| {
                tracing::error!("{}: decode: {err}", self.source.display());
                String::new()
            }),
        }
    }

    /// The raw bytes the ids stand for (a token may end mid-UTF-8 character).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, ModelError> {
        let unknown = |id: u32| {
            ModelError::Tokenizer(format!(
                "id {id} is not in the vocabulary of {} ({} ids); was the text produced by a \
                 different model?",
                self.source.display(),
                self.vocab_size()
            ))
        };
        match &self.backend {
            Backend::Tiktoken(model) => model.decode_bytes(ids).map_err(unknown),
            Backend::HuggingFace(hf) if hf.byte_level => {
                // Mirrors the ByteLevel decoder: a token whose chars are all byte-level symbols
                // maps to those bytes, any other token (e.g. a non-ASCII added literal) to its
                // own UTF-8.
                let alphabet = bpe::byte_level_decoder();
                let mut out = Vec::with_capacity(ids.len() * 4);
                for &id in ids {
                    let token = hf.tokenizer.id_to_token(id).ok_or_else(|| unknown(id))?;
                    let mapped: Option<Vec<u8>> =
                        token.chars().map(|c| alphabet.get(&c).copied()).collect();
                    match mapped {
                        Some(bytes) => out.extend(bytes),
                        None => out.extend_from_slice(token.as_bytes()),
                    }
                }
                Ok(out)
            }
            Backend::HuggingFace(hf) => {
                if let Some(&id) = ids
                    .iter()
                    .find(|&&id| hf.tokenizer.id_to_token(id).is_none())
                {
                    return Err(unknown(id));
                }
                Ok(self.decode(ids).into_bytes())
            }
        }
    }

    /// A token's id: a special literal, or the vocabulary spelling (byte-level, `Ġ` for space).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match &self.backend {
            Backend::Tiktoken(model) => model.token_to_id(token),
            Backend::HuggingFace(hf) => hf.tokenizer.token_to_id(token),
        }
    }

    /// A token's vocabulary spelling (special literal, or byte-level for ordinary tokens).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match &self.backend {
            Backend::Tiktoken(model) => model.id_to_token(id),
            Backend::HuggingFace(hf) => hf.tokenizer.id_to_token(id),
        }
    }

    /// Number of ids, special ones included (one past the largest id).
    pub fn vocab_size(&self) -> usize {
        match &self.backend {
            Backend::Tiktoken(model) => model.vocab_size(),
            Backend::HuggingFace(hf) => hf.tokenizer.get_vocab_size(true),
        }
    }

    /// The literal strings of all special / added tokens, in id order.
    pub fn special_tokens(&self) -> &[String] {
        match &self.backend {
            Backend::Tiktoken(model) => model.special_tokens(),
            Backend::HuggingFace(hf) => &hf.added_literals,
        }
    }

    /// Where special-token literals occur in `text`, left to right, the longest at a position
    /// (`(start, end)` byte offsets). One automaton over every literal, built once: a scan of all
    /// of Kimi's 256 literals at each candidate byte was half of `build`'s CPU when the answers
    /// are despaced under several shapes.
    pub fn special_spans<'a>(&'a self, text: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
        self.special_search()
            .searcher
            .as_ref()
            .into_iter()
            .flat_map(move |s| s.find_iter(text))
            .map(|m| (m.start(), m.end()))
    }

    /// The special-token literals that occur in `text`, each once, in the order of
    /// [`Tokenizer::special_tokens`] (what `contains` on each gives): one pass of an automaton
    /// built once (Kimi has 256 literals; grouping them by first byte on every call was a
    /// twentieth of `build`'s CPU).
    pub fn special_tokens_in(&self, text: &str) -> Vec<&str> {
        let tokens = self.special_tokens();
        let search = self.contained_search.get_or_init(|| {
            let (index, literals): (Vec<usize>, Vec<&String>) = tokens
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .unzip();
            AhoCorasick::new(literals)
                .ok()
                .map(|searcher| (searcher, index))
        });
        let Some((searcher, index)) = search else {
            return tokens
                .iter()
                .filter(|t| !t.is_empty() && text.contains(t.as_str()))
                .map(String::as_str)
                .collect();
        };
        let mut found = vec![false; tokens.len()];
        for m in searcher.find_overlapping_iter(text) {
            found[index[m.pattern().as_usize()]] = true;
        }
        tokens
            .iter()
            .zip(found)
            .filter(|(_, found)| *found)
            .map(|(t, _)| t.as_str())
            .collect()
    }

    fn special_search(&self) -> &SpecialSearch {
        self.special_search.get_or_init(|| {
            let literals: Vec<&String> = self
                .special_tokens()
                .iter()
                .filter(|s| !s.is_empty())
                .collect();
            SpecialSearch {
                searcher: AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&literals)
                    .ok(),
                any_whitespace: literals.iter().any(|s| s.chars().any(char::is_whitespace)),
            }
        })
    }

    /// How many more tokens `text` encodes to with each of `inserts` (whitespace) put at byte
    /// `at`, from the stretch between special literals that holds `at` alone. `None` where that
    /// is not what encoding the whole text gives: a Hugging Face tokenizer (an added token may
    /// strip the whitespace beside it), a literal holding whitespace, `at` inside a literal, a
    /// Kimi text long enough to be cut into chunks before its literals are found.
    ///
    /// tiktoken finds the literals first and encodes the text between them each on its own, so
    /// the rest of the text encodes alike with or without the insert; within that stretch only
    /// the pieces around `at` can change ([`TiktokenModel::insert_window`]). An answer's
    /// whitespace sites (`reconstruct/synth.rs`) are each measured on a few pieces instead of
    /// the whole text.
    pub fn insert_deltas(&self, text: &str, at: usize, inserts: &[&str]) -> Option<Vec<i64>> {
        let Backend::Tiktoken(model) = &self.backend else {
            return None;
        };
        let longest = inserts.iter().map(|s| s.len()).max().unwrap_or(0);
        if !model.splits_at_literals_first(text.len() + longest)
            || self.special_search().any_whitespace
            || !inserts.iter().all(|s| s.chars().all(char::is_whitespace))
            || !text.is_char_boundary(at)
        {
            return None;
        }
        let (mut start, mut end) = (0, text.len());
        for (from, to) in self.special_spans(text) {
            if to <= at {
                start = to;
            } else if from >= at {
                end = from;
                break;
            } else {
                return None;
            }
        }
        let (from, to) = model.insert_window(&text[start..end], at - start);
        let stretch = &text[start + from..start + to];
        let cut = at - start - from;
        let base = self.try_encode(stretch).ok()?.len() as i64;
        let mut deltas = Vec::with_capacity(inserts.len());
        for insert in inserts {
            let with = [&stretch[..cut], insert, &stretch[cut..]].concat();
            deltas.push(self.try_encode(&with).ok()?.len() as i64 - base);
        }
        Some(deltas)
    }

    /// Whether `id` is a special / added token (matched as a whole literal by `encode`).
    pub fn is_special(&self, id: u32) -> bool {
        match &self.backend {
            Backend::Tiktoken(model) => model.is_special(id),
            Backend::HuggingFace(hf) => hf.added.contains_key(&id),
        }
    }
}

fn read_tokenizer_config(path: &Path) -> Result<Option<Value>, ModelError> {
    if !path.is_file() {
        return Ok(None);
    }
    let file_error = |message: String| ModelError::File {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| file_error(format!("cannot read ({e}); check the file's permissions")))?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        file_error(format!(
            "line {}: not valid JSON ({e}); re-download tokenizer_config.json",
            e.line()
        ))
    })
}

/// `tokenizer_class: TikTokenTokenizer`, or an `auto_map` pointing at `tokenization_kimi`.
fn is_kimi_config(config: &Value) -> bool {
    config.get("tokenizer_class").and_then(Value::as_str) == Some("TikTokenTokenizer")
        || config
            .get("auto_map")
            .is_some_and(|m| m.to_string().contains("tokenization_kimi"))
}

/// `added_tokens_decoder` (`{"163586": {"content": "<|im_end|>", …}, …}`) as id → literal.
fn added_tokens_decoder(config: &Value) -> FxHashMap<u32, String> {
    let Some(map) = config
        .get("added_tokens_decoder")
        .and_then(Value::as_object)
    else {
        return FxHashMap::default();
    };
    map.iter()
        .filter_map(|(id, entry)| {
            let id = id.parse().ok()?;
            let content = entry.get("content")?.as_str()?;
            Some((id, content.to_string()))
        })
        .collect()
}

fn read_json(path: &Path) -> Result<Value, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::File {
        path: path.display().to_string(),
        message: format!("cannot read ({e})"),
    })?;
    serde_json::from_str(&text).map_err(|e| ModelError::File {
        path: path.display().to_string(),
        message: format!("line {}: not valid JSON ({e})", e.line()),
    })
}

/// Whether a `tokenizer.json` decoder is (or contains) the GPT-2 byte-level decoder.
fn decoder_is_byte_level(decoder: &Value) -> bool {
    match decoder.get("type").and_then(Value::as_str) {
        Some("ByteLevel") => true,
        Some("Sequence") => decoder
            .get("decoders")
            .and_then(Value::as_array)
            .is_some_and(|ds| ds.iter().any(decoder_is_byte_level)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Tokenizer>();
    }

    #[test]
    fn kimi_config_detection() {
        let by_class = serde_json::json!({"tokenizer_class": "TikTokenTokenizer"});
        let by_map = serde_json::json!({"auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", null]}});
        let other = serde_json::json!({"tokenizer_class": "Qwen2Tokenizer"});
        assert!(is_kimi_config(&by_class));
        assert!(is_kimi_config(&by_map));
        assert!(!is_kimi_config(&other));
    }

    #[test]
    fn missing_dir_says_what_to_do() {
        let err = Tokenizer::from_dir(Path::new("/nonexistent/model")).err();
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("/nonexistent/model"), "{message}");
        assert!(message.contains("--model"), "{message}");
    }
}
