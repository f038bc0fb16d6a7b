//! Tokenizer exactness against references nobody here wrote: ids published for Kimi, the
//! golden renders in `ASSETS/golden/kimi.json`, and parity corpora produced by Python
//! `tiktoken` / `tokenizers` (`tests/data/parity/`, made by `scripts/` on the refdata branch).
//! Plus encode/decode round-trip properties and the `draftgen tokenize` CLI contract.

mod common;

use draftgen::model::Tokenizer;
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use common::assets;

fn load(name: &str) -> &'static Tokenizer {
    static KIMI: OnceLock<Tokenizer> = OnceLock::new();
    static QWEN3: OnceLock<Tokenizer> = OnceLock::new();
    static DEEPSEEK: OnceLock<Tokenizer> = OnceLock::new();
    static SMOLLM2: OnceLock<Tokenizer> = OnceLock::new();
    let cell = match name {
        "kimi-k2.5" => &KIMI,
        "qwen3" => &QWEN3,
        "deepseek-v3" => &DEEPSEEK,
        "smollm2-135m-instruct" => &SMOLLM2,
        other => panic!("no such test model {other}"),
    };
    cell.get_or_init(|| Tokenizer::from_dir(&assets().join(name)).expect(name))
}

fn kimi() -> &'static Tokenizer {
    load("kimi-k2.5")
}

#[test]
fn kimi_known_ids() {
    // Ids of the model's own tokenizer (`added_tokens_decoder` and tiktoken.model).
    assert_eq!(kimi().encode("Four.<|im_end|>"), [42629, 13, 163586]);
    assert_eq!(kimi().encode("<think>hi</think>"), [163606, 9663, 163607]);
    assert_eq!(
        kimi().encode("functions.get_weather:0"),
        [41937, 1150, 21055, 2800, 25, 15]
    );
}

#[test]
fn kimi_special_table() {
    let k = kimi();
    assert_eq!(k.vocab_size(), 163_840);
    assert_eq!(k.special_tokens().len(), 256);
    assert_eq!(k.token_to_id("<|im_end|>"), Some(163586));
    assert_eq!(k.token_to_id("<|reserved_token_163589|>"), Some(163589));
    assert_eq!(k.id_to_token(163839).as_deref(), Some("[PAD]"));
    assert_eq!(
        k.id_to_token(163608).as_deref(),
        Some("<|reserved_token_163608|>")
    );
    assert!(k.is_special(163606) && k.is_special(163584) && !k.is_special(42629));
    assert_eq!(k.id_to_token(13).as_deref(), Some("."));
    assert_eq!(k.token_to_id("."), Some(13));
    assert_eq!(k.id_to_token(163840), None);
}

#[test]
fn kimi_encode_ordinary_keeps_literals_as_text() {
    let ids = kimi().encode_ordinary("Four.<|im_end|>");
    assert!(ids.iter().all(|&id| id < 163_584), "{ids:?}");
    assert_eq!(kimi().decode(&ids), "Four.<|im_end|>");
}

#[test]
fn kimi_golden_renders_reencode() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(assets().join("golden/kimi.json")).unwrap())
            .unwrap();
    let mut checked = 0;
    for (name, entry) in golden.as_object().unwrap() {
        let (Some(text), Some(ids)) = (entry.get("text"), entry.get("token_ids")) else {
            continue;
        };
        let want: Vec<u32> = serde_json::from_value(ids.clone()).unwrap();
        assert_eq!(kimi().encode(text.as_str().unwrap()), want, "{name}");
        checked += 1;
    }
    assert!(checked >= 2, "golden/kimi.json has {checked} id lists");
}

#[test]
fn decode_bytes_keeps_partial_utf8() {
    // "😀" is several byte tokens in Kimi's vocabulary or one; either way the bytes concatenate.
    let ids = kimi().encode("😀");
    let bytes: Vec<u8> = ids
        .iter()
        .flat_map(|&id| kimi().decode_bytes(&[id]).unwrap())
        .collect();
    assert_eq!(bytes, "😀".as_bytes());
    assert!(kimi().decode_bytes(&[999_999]).is_err());
    for name in ["qwen3", "deepseek-v3"] {
        let t = load(name);
        let ids = t.encode("日本語 😀 <|im_end|>");
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&id| t.decode_bytes(&[id]).unwrap())
            .collect();
        assert_eq!(String::from_utf8(bytes).unwrap(), t.decode(&ids), "{name}");
    }
}

#[test]
fn hf_added_tokens_are_literals() {
    let qwen = load("qwen3");
    assert_eq!(qwen.encode("<|im_end|>"), [151645]);
    assert_eq!(qwen.encode("<think>"), [151667]);
    assert!(qwen.is_special(151645) && qwen.is_special(151667));
    assert!(qwen.special_tokens().iter().any(|s| s == "<tool_call>"));
    // `<|im_end|>` is flagged special: split when literals are plain text.
    assert_ne!(qwen.encode_ordinary("<|im_end|>"), [151645]);
    // No BOS from the post-processor (DeepSeek's adds one when add_special_tokens=True).
    assert_eq!(load("deepseek-v3").encode("hi").len(), 1);
}

/// Parity corpora: `{"text": str, "ids": [u32]}` or `{"repeat": [[piece, count], …], "ids": …}`.
fn check_parity(model: &str, file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity")
        .join(file);
    let corpus = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (generated on the refdata branch)", path.display()));
    let tokenizer = load(model);
    let mut lines = 0;
    let mut failures = Vec::new();
    for (index, line) in corpus.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line).unwrap();
        let text = match (entry.get("text"), entry.get("repeat")) {
            (Some(text), _) => text.as_str().unwrap().to_string(),
            (None, Some(repeat)) => repeat
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| {
                    let piece = pair[0].as_str().unwrap();
                    piece.repeat(pair[1].as_u64().unwrap() as usize)
                })
                .collect(),
            _ => panic!("{}:{}: neither text nor repeat", path.display(), index + 1),
        };
        let want: Vec<u32> = serde_json::from_value(entry["ids"].clone()).unwrap();
        let got = tokenizer.encode(&text);
        if got != want {
            failures.push(format!(
                "{}:{}: {:?}\n  want {:?}\n  got  {:?}",
                path.display(),
                index + 1,
                text.chars().take(80).collect::<String>(),
                &want[..want.len().min(30)],
                &got[..got.len().min(30)]
            ));
        }
        lines += 1;
    }
    assert!(lines > 0, "{}: empty corpus", path.display());
    assert!(
        failures.is_empty(),
        "{} of {lines} lines differ:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn parity_kimi() {
    check_parity("kimi-k2.5", "tokenize_kimi.jsonl");
}

#[test]
fn parity_qwen3() {
    check_parity("qwen3", "tokenize_qwen3.jsonl");
}

#[test]
fn parity_deepseek_v3() {
    check_parity("deepseek-v3", "tokenize_deepseek_v3.jsonl");
}

#[test]
fn encode_batch_matches_encode_in_order() {
    let texts = ["a", "Four.<|im_end|>", "", "中文 text\n\n  x"];
    let batch = kimi().encode_batch(&texts);
    let single: Vec<Vec<u32>> = texts.iter().map(|t| kimi().encode(t)).collect();
    assert_eq!(batch, single);
}

#[test]
fn kimi_uses_the_fast_path() {
    assert!(kimi().tiktoken().unwrap().has_fast_path());
}

#[test]
fn insert_deltas_only_where_stretches_encode_alone() {
    let text = "reasoning.\n</think>Answer<|im_end|>";
    let at = text.find("</think>").unwrap();
    assert_eq!(
        kimi().insert_deltas(text, at, &["", " "]).map(|d| d.len()),
        Some(2)
    );
    // inside a literal
    assert_eq!(kimi().insert_deltas(text, at + 2, &[" "]), None);
    // a Hugging Face tokenizer: an added token may strip the whitespace beside it
    assert_eq!(load("qwen3").insert_deltas(text, at, &[" "]), None);
}

/// [`Tokenizer::insert_deltas`] at `at` (moved back to a character boundary), where it gives
/// deltas (`always`: it must), against tiktoken-rs encoding the whole text with each insert.
fn check_insert_deltas(text: &str, at: usize, always: bool) -> Result<(), TestCaseError> {
    let model = kimi().tiktoken().unwrap();
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let inserts = ["", " ", "\n", "\n\n", "  ", "\t", " \n", "\n "];
    let Some(deltas) = kimi().insert_deltas(text, at, &inserts) else {
        prop_assert!(!always, "no deltas at {at} of {text:?}");
        return Ok(());
    };
    let base = model.encode_with_core_bpe(text).len() as i64;
    for (insert, delta) in inserts.iter().zip(deltas) {
        let with = format!("{}{insert}{}", &text[..at], &text[at..]);
        let want = model.encode_with_core_bpe(&with).len() as i64 - base;
        prop_assert_eq!(delta, want, "{:?} at {} of {:?}", insert, at, text);
    }
    Ok(())
}

/// Prose-like text: words, contractions, digits, punctuation, Han, marks and every kind of
/// whitespace, where [`Tokenizer::insert_deltas`] narrows to a few pieces.
fn prose() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "word", "Word", "WORD", "don't", "'s", "'LL", "'", "12", "12345", ".", "...", "?!", "(",
        "*", "中文", "é", "e\u{301}", "\u{301}", "ⅻ", " ", "  ", "\t", "\n", "\n\n", "\r\n", " \n",
        "\u{a0}", "\u{3000}", "\u{85}", "\u{2028}", "\u{b}", "😀", "<|", "x",
    ]);
    prop::collection::vec(piece, 0..40).prop_map(|parts| parts.concat())
}

/// Text built from the pieces where split patterns are subtle: whitespace runs before letters,
/// digits and punctuation, line breaks, case, Han, marks, contractions, literals.
fn tricky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        prop::sample::select(vec![
            " ",
            "  ",
            "   ",
            "\t",
            "\n",
            "\r\n",
            " \n ",
            "\u{a0}",
            "\u{3000}",
            "\u{1c}",
            "a",
            "Ab",
            "ABC",
            "'s",
            "'LL",
            "中文",
            "é",
            "\u{301}",
            "1234",
            "!",
            "?!",
            "<|im_end|>",
            "<think>",
            "[EOS]",
            "<|",
            "😀",
            "\u{2028}",
            "x",
        ])
        .prop_map(str::to_string),
        // Pieces past 100 bytes take tiktoken's other merge routine.
        (
            1usize..300,
            prop::sample::select(vec!["a", " ", "中", "ab", "\n"])
        )
            .prop_map(|(n, s)| s.repeat(n)),
    ];
    prop::collection::vec(piece, 0..16).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Encoded twice: the second time every piece comes from the word cache.
    #[test]
    fn kimi_fast_path_equals_core_bpe(text in tricky_text()) {
        let model = kimi().tiktoken().unwrap();
        let want = model.encode_with_core_bpe(&text);
        prop_assert_eq!(&model.encode(&text), &want);
        prop_assert_eq!(&model.encode(&text), &want);
    }

    #[test]
    fn hf_fast_path_equals_tokenizers_crate(text in tricky_text()) {
        for name in ["qwen3", "deepseek-v3"] {
            let tokenizer = load(name);
            prop_assert!(tokenizer.has_fast_path());
            let want = tokenizer.encode_with_hf_crate(&text).unwrap().unwrap();
            prop_assert_eq!(&tokenizer.encode(&text), &want);
            prop_assert_eq!(&tokenizer.encode(&text), &want);
        }
    }

    /// Whitespace put into one stretch between literals changes the count as it does for the
    /// whole text, encoded by tiktoken-rs (`reconstruct/synth.rs` measures its sites so).
    #[test]
    fn kimi_insert_deltas_equal_the_whole_texts(text in tricky_text(), at in 0usize..2000) {
        check_insert_deltas(&text, at, false)?;
    }

    #[test]
    fn kimi_insert_deltas_in_prose_equal_the_whole_texts(text in prose(), at in 0usize..400) {
        check_insert_deltas(&text, at, true)?;
    }

    #[test]
    fn kimi_roundtrip(text in any::<String>()) {
        prop_assert_eq!(kimi().decode(&kimi().encode(&text)), text.clone());
        prop_assert_eq!(kimi().decode(&kimi().encode_ordinary(&text)), text);
    }

    #[test]
    fn kimi_roundtrip_with_literals(parts in prop::collection::vec(
        prop_oneof![any::<String>(), Just("<|im_end|>".to_string()), Just("<think>".to_string()),
                    Just("  \n".to_string()), Just("[EOS]".to_string())], 0..8)) {
        let text: String = parts.concat();
        prop_assert_eq!(kimi().decode(&kimi().encode(&text)), text);
    }

    #[test]
    fn qwen3_roundtrip(text in any::<String>()) {
        // Qwen3 normalizes to NFC, so the round trip holds for NFC text.
        let text: String = unicode_nfc(&text);
        let qwen = load("qwen3");
        prop_assert_eq!(qwen.decode(&qwen.encode(&text)), text);
    }

    #[test]
    fn deepseek_v3_roundtrip(text in any::<String>()) {
        let deepseek = load("deepseek-v3");
        prop_assert_eq!(deepseek.decode(&deepseek.encode(&text)), text);
    }
}

/// NFC through the same normalizer the Qwen3 tokenizer uses.
fn unicode_nfc(text: &str) -> String {
    use tokenizers::normalizers::unicode::NFC;
    use tokenizers::{NormalizedString, Normalizer};
    let mut normalized = NormalizedString::from(text);
    NFC.normalize(&mut normalized).unwrap();
    normalized.get().to_string()
}

fn draftgen() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_draftgen"));
    command.env("DRAFTGEN_ASSETS", assets());
    command
}

#[test]
fn cli_text() {
    let out = draftgen()
        .args([
            "tokenize",
            "--model",
            "kimi-k2.5",
            "--text",
            "Four.<|im_end|>",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"ids\":[42629,13,163586]}\n"
    );
}

#[test]
fn cli_input_file_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let output = dir.path().join("out.jsonl");
    std::fs::write(
        &input,
        "{\"text\": \"<think>hi</think>\"}\n{\"text\": \"functions.get_weather:0\"}\n{\"text\": \"\"}\n",
    )
    .unwrap();
    let model_dir = assets().join("kimi-k2.5");
    let status = draftgen()
        .args(["tokenize", "--model"])
        .arg(&model_dir)
        .arg("--input")
        .arg(&input)
        .arg("--out")
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "{\"ids\":[163606,9663,163607]}\n{\"ids\":[41937,1150,21055,2800,25,15]}\n{\"ids\":[]}\n"
    );
}

#[test]
fn cli_bad_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.jsonl");
    std::fs::write(&input, "{\"text\": \"ok\"}\n{\"txt\": 3}\n").unwrap();
    let out = draftgen()
        .args(["tokenize", "--model", "qwen3", "--input"])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:2", input.display())),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn cli_missing_model_is_a_usage_error() {
    let out = draftgen()
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env(
            "HF_HUB_CACHE",
            std::env::temp_dir().join("draftgen-test-empty-hub"),
        )
        .args(["tokenize", "--model", "acme/NoSuchModel", "--text", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("DRAFTGEN_ASSETS") && stderr.contains("--model DIR"),
        "{stderr}"
    );
}
