//! DeepSeek-V3.1's server shape: what vLLM 0.33.0's own `deepseek_v31` tool parser and
//! `deepseek_v3` reasoning parser return for known model texts, non-streamed
//! (`tests/data/deepseek_v31/parser_shapes.jsonl`, made by
//! `tests/data/gen/make_deepseek_v31_shapes.py` running the wheel's code), against
//! `server::deepseek_v31::parse`; and the completion text the family writes for those answers
//! is the text the model wrote.

mod common;

use common::family::{assert_parsed_as_row, corpus, row_tool_calls};
use draftgen::model::family::{deepseek_v31, AssistantTurn};
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
