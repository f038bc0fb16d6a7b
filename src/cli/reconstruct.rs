//! `draftgen reconstruct`: exact prompt and completion ids from `{request, response}` lines.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::io::{read_jsonl, Output};
use super::model_args::ModelArgs;
use crate::api::ServerKind;
use crate::reconstruct::{reconstruct_batch, ExchangeRequest, Fidelity, ReconstructOptions};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// JSONL of `{"request": {...}, "response": <chat.completion JSON>, "options"?: {...}}`
    /// (`options`: `spaces_around_special_tokens`, `kind`, `server_version`, `stream`).
    #[arg(long)]
    input: PathBuf,
    /// Write here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The endpoint inserts a space on each side of special tokens (vLLM's
    /// `spaces_between_special_tokens`, its default); a line's `options` can say so too.
    #[arg(long)]
    spaces_around_special_tokens: bool,
    /// The server that answered: openrouter, vllm, sglang, llamacpp or generic (unknown: only
    /// the token count is checked). Its shape is used to check every candidate forward.
    #[arg(long, default_value = "generic")]
    kind: ServerKind,
    /// The server's version where shapes differ (vLLM `0.11.2` has `reasoning_content`);
    /// default: the newest known.
    #[arg(long)]
    server_version: Option<String>,
}

#[derive(Deserialize)]
struct Line {
    request: ExchangeRequest,
    response: Value,
    #[serde(default)]
    options: Option<ReconstructOptions>,
}

#[derive(Serialize)]
struct OutLine<'a> {
    prompt_ids: &'a [u32],
    completion_ids: &'a [u32],
    warnings: &'a [String],
    fidelity: &'a Fidelity,
}

#[derive(Serialize)]
struct ErrorLine {
    error: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    let lines = read_jsonl::<Line>(&args.input)?;
    let default_options = ReconstructOptions {
        spaces_around_special_tokens: args.spaces_around_special_tokens,
        kind: args.kind,
        server_version: args.server_version.clone(),
        stream: None,
        ..ReconstructOptions::default()
    };

    let mut bad_input = false;
    let mut items = Vec::with_capacity(lines.len());
    let mut slots = Vec::with_capacity(lines.len());
    for (number, parsed) in lines {
        match parsed {
            Ok(line) => {
                slots.push((number, Ok(items.len())));
                items.push((
                    line.request,
                    line.response,
                    line.options.unwrap_or_else(|| default_options.clone()),
                ));
            }
            Err(message) => {
                bad_input = true;
                slots.push((number, Err(message)));
            }
        }
    }
    let results = reconstruct_batch(&profile, &items);

    let mut out = Output::open(args.out.as_deref())?;
    let mut failed = false;
    for (number, slot) in slots {
        match slot {
            Ok(index) => match &results[index] {
                Ok(r) => out.line(&OutLine {
                    prompt_ids: &r.prompt_ids,
                    completion_ids: &r.completion_ids,
                    warnings: &r.warnings,
                    fidelity: &r.fidelity,
                })?,
                Err(e) => {
                    failed = true;
                    let error = format!("{}:{number}: {e}", args.input.display());
                    eprintln!("error: {error}");
                    out.line(&ErrorLine { error })?;
                }
            },
            Err(error) => {
                eprintln!("error: {error}");
                out.line(&ErrorLine { error })?;
            }
        }
    }
    out.finish()?;
    Ok(if bad_input {
        ExitCode::from(2)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
