//! `draftgen import`: earlier local generations with the model's output ids → finished records
//! in a run directory (see `build::import` for the shapes read).
//!
//! Exit codes: 0 every line imported (or its prompt was already finished); 1 some lines could
//! not be imported (the others are, each error names FILE:LINE); 2 bad flags or unreadable files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::model_args::ModelArgs;
use super::{finished, print_json, UsageError};
use crate::build::import::{import, MatchBy};
use crate::build::BuildError;

#[derive(clap::Args)]
pub struct Args {
    /// JSONL files of generations (SGLang / vLLM output with output ids, speculators rows).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// The run directory to record them in (created if missing).
    #[arg(long)]
    run: PathBuf,
    /// prompts.jsonl (from `prepare`) the generations answered: gives each line its prompt id
    /// (and the messages, to render prompt ids when a line has none).
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Map lines to --prompts by position (line i = prompt i) or by an id field.
    #[arg(long, value_enum, default_value = "index")]
    by: MatchBy,
    /// The field holding the prompt id (with --by id, or without --prompts).
    #[arg(long, default_value = "id")]
    id_field: String,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.model.load()?;
    let files: Vec<&std::path::Path> = args.files.iter().map(PathBuf::as_path).collect();
    let summary = match import(
        &profile,
        &files,
        &args.run,
        args.prompts.as_deref(),
        args.by,
        &args.id_field,
    ) {
        Ok(summary) => summary,
        Err(e @ (BuildError::Io { .. } | BuildError::BadInput { .. })) => {
            return Err(UsageError(e.to_string()).into())
        }
        Err(e) => return Err(e.into()),
    };
    eprintln!(
        "import: {} generation(s) recorded in {} with their ids, {} already finished there, {} error(s)",
        summary.imported,
        args.run.display(),
        summary.already_finished,
        summary.errors.len()
    );
    for error in &summary.errors {
        eprintln!("  error: {error}");
    }
    if args.json {
        print_json(&summary)?;
    }
    Ok(finished(summary.errors.is_empty()))
}
