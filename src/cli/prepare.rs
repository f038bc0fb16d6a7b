//! `draftgen prepare`: dataset files → `prompts.jsonl`, with a per-source summary on stderr
//! (or as JSON on stdout with `--json`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{print_json, UsageError};
use crate::dataset::reader::DEFAULT_MAX_LINE_BYTES;
use crate::dataset::{self, DatasetError, Format, PrepareOptions, PrepareReport, Shard};

#[derive(clap::Args)]
pub struct Args {
    /// Dataset files: JSONL, JSON (array, or an object wrapping one) or Parquet. Other files
    /// (a README, a licence: neither such an extension nor JSON or Parquet inside) are skipped
    /// with one line saying which, so `prepare samples/*` works.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Read every record with this adapter instead of detecting it from the record's keys:
    /// openai, sharegpt, glaive-v2, llamafactory, opencodeinstruct, magicoder, alpaca,
    /// ultrachat, reason-tool-use.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Where to write the prompts (replaced atomically).
    #[arg(long, default_value = "prompts.jsonl")]
    out: PathBuf,
    /// Fail (exit 2) on the first malformed record instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Keep only shard I of N (0-based), chosen by prompt id: disjoint and stable.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Take at most N prompts from each input file.
    #[arg(long, value_name = "N")]
    limit_per_source: Option<u64>,
    /// Take at most N prompts in total.
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// Longest JSONL line to read; longer lines are reported and skipped.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Print the summary as JSON on stdout instead of a table on stderr.
    #[arg(long)]
    json: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}

/// Whether `path` may be a dataset: a dataset extension, or content that starts like JSON or
/// Parquet. A file that cannot be read is kept, so that reading it reports the error.
fn looks_like_dataset(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if matches!(
        ext.as_deref(),
        Some("jsonl" | "ndjson" | "json" | "parquet" | "pq")
    ) {
        return true;
    }
    let Ok(mut file) = std::fs::File::open(path) else {
        return true;
    };
    if path.is_dir() {
        return true;
    }
    let mut head = [0u8; 512];
    let Ok(n) = file.read(&mut head) else {
        return true;
    };
    let head = &head[..n];
    head.starts_with(b"PAR1")
        || matches!(
            head.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        )
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (files, skipped): (Vec<PathBuf>, Vec<PathBuf>) =
        args.files.into_iter().partition(|f| looks_like_dataset(f));
    if !skipped.is_empty() {
        let names: Vec<String> = skipped.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "prepare: skipped {} file(s) that are not datasets (no .jsonl/.json/.parquet extension, and not JSON or Parquet inside): {}",
            skipped.len(),
            names.join(", ")
        );
    }
    if files.is_empty() {
        return Err(
            UsageError("none of the inputs is a dataset (JSONL, JSON or Parquet)".into()).into(),
        );
    }
    let opts = PrepareOptions {
        format: args.format,
        out: args.out,
        strict: args.strict,
        shard: args.shard,
        limit_per_source: args.limit_per_source,
        limit: args.limit,
        max_line_bytes: args.max_line_bytes,
    };
    let report = match dataset::prepare(&files, &opts) {
        Ok(report) => report,
        Err(e @ DatasetError::Read { .. }) => return Err(UsageError(e.to_string()).into()),
        Err(e) if e.is_input_error() => return Err(UsageError(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    for source in &report.sources {
        for issue in &source.issues {
            eprintln!("{issue}");
        }
        let shown = source.issues.len() as u64;
        let total = source.malformed + source.warnings;
        if total > shown {
            eprintln!("{}: {} more problems not shown", source.path, total - shown);
        }
    }
    if args.json {
        print_json(&report)?;
    } else {
        eprint!("{}", summary_table(&report));
    }
    if report.prompts() == 0 {
        return Err(UsageError("no prompts were produced from the inputs".into()).into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The per-source table: counts, then skip reasons indented under their source.
fn summary_table(report: &PrepareReport) -> String {
    let width = report
        .sources
        .iter()
        .map(|s| s.source.len())
        .chain([6])
        .max()
        .unwrap_or(6);
    let mut out = format!(
        "{:<width$}  {:>7}  {:>7}  {:>5}  {:>7}  {:>9}  {:>8}  {:>9}\n",
        "source", "read", "prompts", "dups", "skipped", "malformed", "warnings", "off-shard"
    );
    for s in &report.sources {
        out += &format!(
            "{:<width$}  {:>7}  {:>7}  {:>5}  {:>7}  {:>9}  {:>8}  {:>9}{}\n",
            s.source,
            s.read,
            s.prompts,
            s.duplicates,
            s.skipped_total(),
            s.malformed,
            s.warnings,
            s.out_of_shard,
            if s.limited { "  (limit reached)" } else { "" },
        );
        for (reason, count) in &s.skipped {
            out += &format!("{:<width$}    skipped {count}: {reason}\n", "");
        }
    }
    out += &format!(
        "{} prompts written to {}\n",
        report.prompts(),
        report.out.display()
    );
    out
}
