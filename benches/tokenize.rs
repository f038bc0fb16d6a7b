//! Encode speed on the parity corpora.
//!
//! `scripts/bench_tokenize.py` runs this and the Python references on the same texts and writes
//! the ratios into BENCHMARKS.md. Benches:
//! - `kimi_texts_*`: the 1,079 ordinary texts of `tokenize_kimi.jsonl` (56k chars; short texts,
//!   so per-call cost counts);
//! - `kimi_long_*`: its 20 long texts (25k–459k chars: long runs, 400k-char chunks);
//! - `*_fast`: our encoder (regex-automata split), `*_core_bpe`: tiktoken-rs `CoreBPE` alone,
//!   `*_batch`: `encode_batch` on all cores;
//! - `render_<family>_*`: the 240 rendered conversations (`text` of `render_<family>.jsonl`),
//!   one thread, with our encoder (`_fast`) and the reference crate (`_reference`: the
//!   `tokenizers` crate, or tiktoken-rs `CoreBPE` for Kimi). Divide by 240 for µs/conversation.

use draftgen::model::{assets::assets_root, Tokenizer};
use std::sync::OnceLock;

fn main() {
    divan::main();
}

fn kimi() -> &'static Tokenizer {
    static KIMI: OnceLock<Tokenizer> = OnceLock::new();
    KIMI.get_or_init(|| {
        let root = assets_root().expect("shared assets not found: set DRAFTGEN_ASSETS");
        Tokenizer::from_dir(&root.join("kimi-k2.5")).expect("kimi tokenizer")
    })
}

/// (ordinary texts, long texts) of the Kimi parity corpus.
fn corpus() -> &'static (Vec<String>, Vec<String>) {
    static CORPUS: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/parity/tokenize_kimi.jsonl"
        );
        let text = std::fs::read_to_string(path).expect("parity corpus");
        let (mut texts, mut long) = (Vec::new(), Vec::new());
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let entry: serde_json::Value = serde_json::from_str(line).expect("json line");
            if let Some(t) = entry["text"].as_str() {
                texts.push(t.to_string());
            } else if let Some(repeat) = entry["repeat"].as_array() {
                long.push(
                    repeat
                        .iter()
                        .map(|p| {
                            p[0].as_str()
                                .unwrap_or("")
                                .repeat(p[1].as_u64().unwrap_or(0) as usize)
                        })
                        .collect(),
                );
            }
        }
        (texts, long)
    })
}

fn encode_all(texts: &[String], encode: impl Fn(&str) -> Vec<u32>) -> usize {
    texts.iter().map(|t| encode(t).len()).sum()
}

#[divan::bench]
fn kimi_texts_fast() -> usize {
    encode_all(&corpus().0, |t| kimi().encode(t))
}

#[divan::bench]
fn kimi_texts_core_bpe() -> usize {
    let model = kimi().tiktoken().expect("tiktoken backend");
    encode_all(&corpus().0, |t| model.encode_with_core_bpe(t))
}

#[divan::bench]
fn kimi_texts_batch() -> usize {
    let texts: Vec<&str> = corpus().0.iter().map(String::as_str).collect();
    kimi().encode_batch(&texts).len()
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn kimi_long_fast() -> usize {
    encode_all(&corpus().1, |t| kimi().encode(t))
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn kimi_long_core_bpe() -> usize {
    let model = kimi().tiktoken().expect("tiktoken backend");
    encode_all(&corpus().1, |t| model.encode_with_core_bpe(t))
}

/// The rendered conversation texts of `tests/data/parity/render_<corpus>.jsonl`.
fn render_texts(corpus: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/data/parity/render_{corpus}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("render parity corpus");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).expect("json line");
            entry["text"].as_str().expect("text").to_string()
        })
        .collect()
}

fn model(name: &str) -> &'static Tokenizer {
    static QWEN3: OnceLock<Tokenizer> = OnceLock::new();
    static DEEPSEEK: OnceLock<Tokenizer> = OnceLock::new();
    let cell = match name {
        "kimi-k2.5" => return kimi(),
        "qwen3" => &QWEN3,
        _ => &DEEPSEEK,
    };
    cell.get_or_init(|| {
        let root = assets_root().expect("shared assets not found: set DRAFTGEN_ASSETS");
        Tokenizer::from_dir(&root.join(name)).expect("tokenizer")
    })
}

macro_rules! render_benches {
    ($($fast:ident, $reference:ident, $corpus:literal, $model:literal;)*) => {$(
        #[divan::bench]
        fn $fast(bencher: divan::Bencher) {
            let (texts, tokenizer) = (render_texts($corpus), model($model));
            bencher.bench(|| encode_all(&texts, |t| tokenizer.encode(t)));
        }

        #[divan::bench]
        fn $reference(bencher: divan::Bencher) {
            let (texts, tokenizer) = (render_texts($corpus), model($model));
            bencher.bench(|| match tokenizer.tiktoken() {
                Some(model) => encode_all(&texts, |t| model.encode_with_core_bpe(t)),
                None => encode_all(&texts, |t| {
                    tokenizer.encode_with_hf_crate(t).and_then(Result::ok).unwrap_or_default()
                }),
            });
        }
    )*};
}

render_benches! {
    render_qwen3_fast, render_qwen3_reference, "qwen3", "qwen3";
    render_deepseek_v3_fast, render_deepseek_v3_reference, "deepseek_v3", "deepseek-v3";
    render_kimi_k2_fast, render_kimi_k2_reference, "kimi_k2", "kimi-k2.5";
    render_kimi_k2_thinking_fast, render_kimi_k2_thinking_reference, "kimi_k2_thinking", "kimi-k2.5";
}
