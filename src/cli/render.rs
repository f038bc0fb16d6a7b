//! `draftgen render`: conversations → the model's prompt text and ids, one `{"text", "ids"}`
//! line per input line.
//!
//! A public contract (DESIGN.md): input lines are `{"messages", "tools"?,
//! "add_generation_prompt"?, "chat_template_kwargs"?}`; output order is input order. Every line is
//! read and checked before anything is written, so bad input fails with its file:line (exit 2)
//! and no partial output.

use rayon::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::ExitCode;

use super::io::{read_jsonl_strict, Output};
use super::model_args::ModelArgs;
use super::UsageError;
use crate::model::RenderInput;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// JSONL file of `{"messages", "tools"?, "add_generation_prompt"?, "chat_template_kwargs"?}`.
    #[arg(long, value_name = "F.jsonl")]
    input: PathBuf,
    /// Write here instead of stdout.
    #[arg(long, value_name = "F")]
    out: Option<PathBuf>,
}

/// One output line, serialized straight from the render (no JSON tree in between).
#[derive(serde::Serialize)]
struct Rendered<'a> {
    text: &'a str,
    ids: &'a [u32],
}

/// One input line.
#[derive(serde::Deserialize)]
struct Line {
    messages: Vec<Value>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    add_generation_prompt: bool,
    #[serde(default)]
    chat_template_kwargs: Option<Map<String, Value>>,
}

const EXPECTED: &str = r#"{"messages": [...], "tools"?: [...], "add_generation_prompt"?: bool, "chat_template_kwargs"?: {...}}"#;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    // Lines are checked as JSON up front but kept as text: each is parsed into its message tree
    // right where it is rendered and dropped there, so the trees never pile up in memory.
    let lines = read_jsonl_strict::<Box<RawValue>>(&args.input, EXPECTED)?;
    let rendered: Vec<Result<(String, Vec<u32>), String>> = lines
        .par_iter()
        .map(|(line_no, raw)| {
            let at = || format!("{}:{line_no}", args.input.display());
            let line: Line = serde_json::from_str(raw.get())
                .map_err(|e| format!("{}: {e} (expected {EXPECTED})", at()))?;
            let input = RenderInput {
                messages: &line.messages,
                tools: line.tools.as_deref(),
                add_generation_prompt: line.add_generation_prompt,
                chat_template_kwargs: line.chat_template_kwargs.as_ref(),
            };
            let text = profile
                .render(&input)
                .map_err(|e| format!("{}: {e}", at()))?;
            let ids = profile.tokenizer.encode(&text);
            Ok((text, ids))
        })
        .collect();
    // A line that is not a conversation, or that the template refuses (`raise_exception`), is
    // bad input: report the first.
    let rendered = rendered
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;

    let mut out = Output::open(args.out.as_deref())?;
    for (text, ids) in &rendered {
        out.line(&Rendered { text, ids })?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
