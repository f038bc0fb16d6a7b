//! `draftgen tokenize`: text → ids with a model's tokenizer, one `{"ids": [...]}` line per input.
//!
//! A public contract (DESIGN.md): outside checks compare these ids with the serving stack's, so
//! special-token literals become their special ids, and output order is input order.

use anyhow::Context as _;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::UsageError;
use crate::model::{assets, Tokenizer};

#[derive(clap::Args)]
pub struct Args {
    /// Model directory, known name (kimi-k2.5, qwen3, deepseek-v3, smollm2) or HF repo id.
    #[arg(long, value_name = "DIR|NAME")]
    model: String,
    /// One text to tokenize.
    #[arg(long, conflicts_with = "input", required_unless_present = "input")]
    text: Option<String>,
    /// JSONL file of `{"text": str}` lines.
    #[arg(long, value_name = "F.jsonl")]
    input: Option<PathBuf>,
    /// Write here instead of stdout.
    #[arg(long, value_name = "F")]
    out: Option<PathBuf>,
}

/// A JSONL input line: `{"text": …}`.
#[derive(serde::Deserialize)]
struct Line {
    text: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = assets::resolve_model(&args.model).map_err(|e| UsageError(e.to_string()))?;
    let tokenizer = Tokenizer::from_dir(&dir).map_err(|e| UsageError(e.to_string()))?;
    let texts = match (&args.text, &args.input) {
        (Some(text), _) => vec![text.clone()],
        (None, Some(path)) => read_texts(path)?,
        (None, None) => return Err(UsageError("pass --text STR or --input F.jsonl".into()).into()),
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids = tokenizer.encode_batch(&refs);
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    for line in &ids {
        serde_json::to_writer(&mut out, &serde_json::json!({ "ids": line }))?;
        out.write_all(b"\n")?;
    }
    out.flush().context("cannot write the output")?;
    Ok(ExitCode::SUCCESS)
}

/// Read every line first, so a bad line fails the command before any output is written.
fn read_texts(path: &Path) -> anyhow::Result<Vec<String>> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("{}: cannot open ({e})", path.display())))?;
    let mut texts = Vec::new();
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line_no = index + 1;
        let line = line
            .map_err(|e| UsageError(format!("{}:{line_no}: cannot read ({e})", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(&line).map_err(|e| {
            UsageError(format!(
                "{}:{line_no}: expected a JSON object {{\"text\": string}} ({e})",
                path.display()
            ))
        })?;
        texts.push(parsed.text);
    }
    Ok(texts)
}
