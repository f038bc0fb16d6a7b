//! `draftgen render`: conversations → the model's prompt text and ids, one `{"text", "ids"}`
//! line per input line.
//!
//! A public contract (DESIGN.md): input lines are `{"messages", "tools"?,
//! "add_generation_prompt"?, "chat_template_kwargs"?}`; output order is input order. Every line is
//! read and checked before anything is written, so bad input fails with its file:line (exit 2)
//! and no partial output.

use rayon::prelude::*;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::io::Output;
use super::model_args::ModelArgs;
use super::UsageError;
use crate::model::{Json, JsonRenderInput};

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

/// One input line, its strings borrowed from the line's text where they have no escapes.
#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    messages: Vec<Json<'a>>,
    #[serde(default, borrow)]
    tools: Option<Vec<Json<'a>>>,
    #[serde(default)]
    add_generation_prompt: bool,
    #[serde(default)]
    chat_template_kwargs: Option<Map<String, Value>>,
}

const EXPECTED: &str = r#"{"messages": [...], "tools"?: [...], "add_generation_prompt"?: bool, "chat_template_kwargs"?: {...}}"#;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    let text = read_input(&args.input)?;
    let lines = lines(&text);
    let rendered: Vec<Result<(String, Vec<u32>), String>> = lines
        .par_iter()
        .map(|&(line_no, line)| {
            let at = || format!("{}:{line_no}", args.input.display());
            let line = line.map_err(|e| format!("{}: {e}", at()))?;
            let line: Line = serde_json::from_str(line)
                .map_err(|e| format!("{}: {e} (expected {EXPECTED})", at()))?;
            let input = JsonRenderInput {
                messages: &line.messages,
                tools: line.tools.as_deref(),
                add_generation_prompt: line.add_generation_prompt,
                chat_template_kwargs: line.chat_template_kwargs.as_ref(),
            };
            let text = profile
                .render_json(&input)
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

/// The input file whole. Lines are not read through `io::read_jsonl_strict`: each is parsed where
/// it is rendered, borrowing from this text (the trees never pile up in memory), and a separate
/// checking pass would scan every line twice.
fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| UsageError(format!("{}: cannot open: {e}", path.display())).into())
}

/// The non-blank lines with their 1-based numbers (`\n` or `\r\n` ends a line), each its text or
/// why it is not UTF-8.
fn lines(text: &[u8]) -> Vec<(usize, Result<&str, std::str::Utf8Error>)> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .map(|(index, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            (index + 1, std::str::from_utf8(line))
        })
        .filter(|(_, line)| !line.as_ref().is_ok_and(|l| l.trim().is_empty()))
        .collect()
}
