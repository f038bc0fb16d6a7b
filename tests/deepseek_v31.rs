//! DeepSeek-V3.1's server shape: what vLLM 0.33.0's own `deepseek_v31` tool parser and
//! `deepseek_v3` reasoning parser return for known model texts, non-streamed
//! (`tests/data/deepseek_v31/parser_shapes.jsonl`, made by
//! `tests/data/gen/make_deepseek_v31_shapes.py` running the wheel's code), against
//! `server::deepseek_v31::parse`; and the completion text the family writes for those answers
//! is the text the model wrote.

mod common;

use common::assets;
use common::family::{assert_parsed_as_row, corpus, row_tool_calls};
use draftgen::model::family::{deepseek_v31, AssistantTurn, Family};
use draftgen::model::{LoadOptions, Profile};
use draftgen::server::deepseek_v31::parse;
use serde_json::Value;

fn rows() -> Vec<Value> {
    corpus("tests/data/deepseek_v31/parser_shapes.jsonl")
}

#[test]
fn parse_returns_what_vllms_parsers_return() {
    let rows = rows();
    assert_eq!(rows.len(), 12);
    for row in &rows {
        let text = row["text"].as_str().unwrap();
        let thinking = row["thinking"].as_bool().unwrap();
        assert_parsed_as_row(parse(text, thinking, true, false), row);
    }
}

/// For every answer of a finished turn whose text the parsers return whole (reasoning closed,
/// nothing cut or dropped), the family's completion text is the model's text again.
#[test]
fn completion_text_inverts_the_parsers() {
    let mut checked = 0;
    for row in rows() {
        let text = row["text"].as_str().unwrap();
        let thinking = row["thinking"].as_bool().unwrap();
        let closed = !thinking || text.contains("</think>");
        let whole_calls = text.matches("<｜tool▁call▁begin｜>").count()
            == row["calls"].as_array().unwrap().len()
            && !text.contains('\n');
        let section_last =
            text.ends_with("<｜tool▁calls▁end｜>") || !text.contains("<｜tool▁calls▁begin｜>");
        if !(closed && whole_calls && section_last) {
            continue;
        }
        let turn = AssistantTurn {
            reasoning: row["reasoning"].as_str().map(str::to_string),
            reasoning_closed: closed,
            content: row["content"].as_str().unwrap_or_default().to_string(),
            tool_calls: row_tool_calls(&row),
            end_of_turn: true,
        };
        let want = format!("{text}<｜end▁of▁sentence｜>");
        assert_eq!(deepseek_v31::completion_text(thinking, &turn), want);
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} answers checked");
}

/// V3.1's own files (`assets/deepseek-v3.1/`, from a registry package): `<think>` and `</think>`
/// are single added tokens (ids as the file lists them, `tests/assets/README.md`), and the
/// directory, whose `tokenizer_config.json` carries DeepSeek's own template, is V3.1's family.
#[test]
fn v31s_own_tokenizer_has_single_think_tokens() {
    let p = Profile::load(&assets().join("deepseek-v3.1"), &LoadOptions::default()).unwrap();
    assert_eq!(p.family, Family::DEEPSEEK_V31);
    assert_eq!(p.tokenizer.encode("<think>"), vec![128798]);
    assert_eq!(p.tokenizer.encode("</think>"), vec![128799]);
    assert_eq!(p.tokenizer.encode("<｜search▁begin｜>"), vec![128796]);
    assert_eq!(p.tokenizer.encode("<｜search▁end｜>"), vec![128797]);
    // DeepSeek-V3's files have place holders there: the markers are several ordinary tokens.
    let v3 = Profile::load(&assets().join("deepseek-v3"), &LoadOptions::default()).unwrap();
    assert!(v3.tokenizer.encode("<think>").len() > 1);
}
