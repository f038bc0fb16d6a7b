//! `draftgen render`: conversations → the model's prompt text and ids, one `{"text", "ids"}`
//! line per input line.
//!
//! A public contract (DESIGN.md): input lines are `{"messages", "tools"?,
//! "add_generation_prompt"?, "chat_template_kwargs"?}`; output order is input order. Every line is
//! read and checked before anything is written, so bad input fails with its file:line (exit 2)
//! and no partial output.

use anyhow::Context as _;
use rayon::prelude::*;
use serde_json::{Map, Value};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::UsageError;
use crate::model::{assets, LoadOptions, Profile, RenderInput};

#[derive(clap::Args)]
pub struct Args {
    /// Model directory, known name (kimi-k2.5, qwen3, deepseek-v3, smollm2) or HF repo id.
    #[arg(long, value_name = "DIR|NAME")]
    model: String,
    /// Model family profile (kimi-k2, kimi-k2-thinking, kimi-k2.5, qwen3, deepseek-v3, generic);
    /// auto-detected when absent.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// Use this Jinja chat template instead of the model's.
    #[arg(long, value_name = "FILE")]
    chat_template: Option<PathBuf>,
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
    let dir = assets::resolve_model(&args.model).map_err(|e| UsageError(e.to_string()))?;
    let options = LoadOptions {
        profile: args.profile.clone(),
        chat_template: args.chat_template.clone(),
    };
    let profile = Profile::load(&dir, &options).map_err(|e| UsageError(e.to_string()))?;
    let lines = read_lines(&args.input)?;
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

    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    for (text, ids) in &rendered {
        serde_json::to_writer(&mut out, &serde_json::json!({ "text": text, "ids": ids }))?;
        out.write_all(b"\n")?;
    }
    out.flush().context("cannot write the output")?;
    Ok(ExitCode::SUCCESS)
}

/// Every non-blank line, parsed, with its 1-based line number.
fn read_lines(path: &Path) -> anyhow::Result<Vec<(usize, Line)>> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("{}: cannot open ({e})", path.display())))?;
    let mut lines = Vec::new();
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line_no = index + 1;
        let line = line
            .map_err(|e| UsageError(format!("{}:{line_no}: cannot read ({e})", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(&line).map_err(|e| {
            UsageError(format!(
                "{}:{line_no}: expected {{\"messages\": [...], \"tools\"?: [...], \
                 \"add_generation_prompt\"?: bool, \"chat_template_kwargs\"?: {{...}}}} ({e})",
                path.display()
            ))
        })?;
        lines.push((line_no, parsed));
    }
    Ok(lines)
}
