//! Kimi encode speed on the parity corpus (`tests/data/parity/tokenize_kimi.jsonl`).
//!
//! `scripts/bench_tokenize.py` runs this and Python tiktoken on the same texts and writes the
//! ratio into BENCHMARKS.md. Benches:
//! - `kimi_texts_*`: the 1,079 ordinary texts (56k chars; short texts, so per-call cost counts);
//! - `kimi_long_*`: the 20 long texts (25k–459k chars: long runs, 400k-char chunks);
//! - `*_fast`: our encoder (regex-automata split), `*_core_bpe`: tiktoken-rs `CoreBPE` alone,
//!   `*_batch`: `encode_batch` on all cores.

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
