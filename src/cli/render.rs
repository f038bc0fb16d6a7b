//! `draftgen render`: conversations → the model's prompt text and ids, one `{"text", "ids"}`
//! line per input line.
//!
//! A public contract (DESIGN.md): input lines are `{"messages", "tools"?,
//! "add_generation_prompt"?, "chat_template_kwargs"?}`; output order is input order. Every line is
//! read and checked before anything is written, so bad input fails with its file:line (exit 2)
//! and no partial output.

use rayon::prelude::*;
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    let lines = read_jsonl_strict::<Line>(
        &args.input,
        r#"{"messages": [...], "tools"?: [...], "add_generation_prompt"?: bool, "chat_template_kwargs"?: {...}}"#,
    )?;
    let rendered: Vec<Result<(String, Vec<u32>), String>> = lines
        .par_iter()
        .map(|(line_no, line)| {
            let input = RenderInput {
                messages: &line.messages,
                tools: line.tools.as_deref(),
                add_generation_prompt: line.add_generation_prompt,
                chat_template_kwargs: line.chat_template_kwargs.as_ref(),
            };
            let text = profile
                .render(&input)
                .map_err(|e| format!("{}:{line_no}: {e}", args.input.display()))?;
            let ids = profile.tokenizer.encode(&text);
            Ok((text, ids))
        })
        .collect();
    // A template that refuses a conversation (`raise_exception`) is bad input: report the first.
    let rendered = rendered
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;

    let mut out = Output::open(args.out.as_deref())?;
    for (text, ids) in &rendered {
        out.line(&serde_json::json!({ "text": text, "ids": ids }))?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
