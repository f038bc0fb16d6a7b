//! `draftgen tokenize`: text → ids with a model's tokenizer, one `{"ids": [...]}` line per input.
//!
//! A public contract (docs/FORMATS.md): outside checks compare these ids with the serving stack's, so
//! special-token literals become their special ids, and output order is input order.

use std::path::PathBuf;
use std::process::ExitCode;

use super::io::{read_jsonl_strict, Output};
use super::UsageError;
use crate::model::{assets, Tokenizer};

#[derive(clap::Args)]
// One of the two inputs is required; naming the group makes clap's error list both.
#[command(group(clap::ArgGroup::new("source").required(true).args(["text", "input"])))]
pub struct Args {
    /// Model directory, known name (kimi-k2.5, qwen3, deepseek-v3, smollm2) or HF repo id.
    #[arg(long, value_name = "DIR|NAME")]
    model: String,
    /// One text to tokenize.
    #[arg(long)]
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
        (None, Some(path)) => read_jsonl_strict::<Line>(path, r#"a JSON object {"text": string}"#)?
            .into_iter()
            .map(|(_, line)| line.text)
            .collect(),
        (None, None) => return Err(UsageError("pass --text STR or --input F.jsonl".into()).into()),
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids = tokenizer.encode_batch(&refs);
    let mut out = Output::open(args.out.as_deref())?;
    for line in &ids {
        out.line(&serde_json::json!({ "ids": line }))?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
