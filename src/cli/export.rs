//! `draftgen export specforge|speculators|vocab`: a build directory → files trainers load as they are.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::UsageError;
use crate::build::{BuildDir, FileError};
use crate::export::next_step::{self, absolute};
use crate::export::vocab::{self, Rule, TokenCounts, VocabMap};
use crate::export::{specforge, speculators, ExportError};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    format: Format,
}

#[derive(clap::Subcommand)]
enum Format {
    /// `specforge.jsonl` for `specforge train` (data.prompts_path); with --run, also the
    /// conversation JSONL SpecForge's own preprocessing reads.
    Specforge {
        /// A `draftgen build` output directory.
        #[arg(long, value_name = "BUILD_DIR")]
        samples: PathBuf,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The run directory the build came from: writes `conversations.jsonl` too.
        #[arg(long, value_name = "RUN_DIR")]
        run: Option<PathBuf>,
    },
    /// `speculators.jsonl` rows for `prepare_data.py`, and `prepared/` as prepare_data.py
    /// writes it (save_to_disk dataset + token_freq.pt).
    Speculators {
        #[arg(long, value_name = "BUILD_DIR")]
        samples: PathBuf,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Clip rows at this many tokens in `prepared/` (prepare_data.py --seq-length).
        #[arg(long, value_name = "N")]
        max_length: Option<usize>,
    },
    /// The draft vocabulary map (d2t, t2d) from loss-masked tokens, with a coverage table.
    Vocab {
        #[arg(long, value_name = "BUILD_DIR")]
        samples: PathBuf,
        #[arg(long, value_name = "N")]
        draft_vocab_size: usize,
        /// Whose selection rule (ties, padding) and file format to follow.
        #[arg(long, value_enum)]
        rule: Rule,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The target model's vocabulary size (default: build.json's model.vocab_size).
        #[arg(long, value_name = "V")]
        target_vocab_size: Option<usize>,
        /// Draft sizes for the coverage table.
        #[arg(long, value_delimiter = ',', default_values_t = [8192usize, 16384, 32768, 65536])]
        coverage_sizes: Vec<usize>,
    },
}

fn open(samples: &Path) -> anyhow::Result<BuildDir> {
    BuildDir::open(samples).map_err(|e| UsageError(e.to_string()).into())
}

fn usage(e: ExportError) -> anyhow::Error {
    match e {
        ExportError::File(FileError::Io { .. }) => e.into(),
        other => UsageError(other.to_string()).into(),
    }
}

fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.format {
        Format::Specforge { samples, out, run } => {
            export_specforge(&samples, &out, run.as_deref())?;
            let prompts = absolute(&out.join("specforge.jsonl"));
            print_lines(&next_step::specforge_config(Some(&prompts), None));
        }
        Format::Speculators {
            samples,
            out,
            max_length,
        } => {
            export_speculators(&samples, &out, max_length)?;
            print_lines(&next_step::speculators_command(
                Some(&absolute(&out.join("prepared"))),
                None,
            ));
            println!("    (add --d2t-path/--t2d-path from `draftgen export vocab --rule speculators`, or --draft-vocab-size N to build the maps from prepared/token_freq.pt)");
        }
        Format::Vocab {
            samples,
            draft_vocab_size,
            rule,
            out,
            target_vocab_size,
            coverage_sizes,
        } => {
            export_vocab(
                &samples,
                draft_vocab_size,
                rule,
                &out,
                target_vocab_size,
                coverage_sizes,
            )?;
            print_lines(&vocab_next_step(&out, rule, draft_vocab_size));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `export speculators` without the next step.
pub(super) fn export_speculators(
    samples: &Path,
    out: &Path,
    max_length: Option<usize>,
) -> anyhow::Result<()> {
    let build = open(samples)?;
    let s = speculators::export(&build, out, max_length).map_err(usage)?;
    println!(
        "speculators: {} rows → {}; prepared/: {} rows ({} clipped, {} dropped without a supervised token), {} loss tokens in token_freq.pt",
        s.rows_in,
        out.join("speculators.jsonl").display(),
        s.rows_written,
        s.clipped,
        s.dropped_unsupervised,
        s.loss_tokens
    );
    Ok(())
}

/// `export specforge` without the next step.
pub(super) fn export_specforge(
    samples: &Path,
    out: &Path,
    run: Option<&Path>,
) -> anyhow::Result<()> {
    let build = open(samples)?;
    let mut summary = specforge::export_tokens(&build, out).map_err(usage)?;
    if let Some(run) = run {
        let conv = specforge::export_conversations(&build, run, out).map_err(usage)?;
        summary.conversations = Some(conv.written);
        for missing in &conv.missing_ids {
            eprintln!(
                "warning: sample {missing}: no successful record in {}",
                run.display()
            );
        }
        if conv.missing > conv.missing_ids.len() as u64 {
            eprintln!(
                "warning: {} samples in all have no successful record in {}",
                conv.missing,
                run.display()
            );
        }
    }
    println!(
        "specforge: {} rows ({} loss tokens, {} without any) → {}",
        summary.rows,
        summary.loss_tokens,
        summary.unsupervised,
        out.join("specforge.jsonl").display()
    );
    if let Some(n) = summary.conversations {
        println!(
            "specforge: {n} conversations → {}",
            out.join("conversations.jsonl").display()
        );
    }
    Ok(())
}

pub(super) fn print_lines(lines: &[String]) {
    for line in lines {
        println!("{line}");
    }
}

/// `export vocab` without the next step.
pub(super) fn export_vocab(
    samples: &Path,
    draft_vocab_size: usize,
    rule: Rule,
    out: &Path,
    target_vocab_size: Option<usize>,
    coverage_sizes: Vec<usize>,
) -> anyhow::Result<()> {
    let build = open(samples)?;
    let target = match target_vocab_size.or(build.vocab_size().map(|v| v as usize)) {
        Some(v) => v,
        None => {
            return Err(UsageError(format!(
                "{}: build.json has no model.vocab_size; pass --target-vocab-size",
                samples.display()
            ))
            .into())
        }
    };
    if draft_vocab_size == 0 || draft_vocab_size > target {
        return Err(UsageError(format!(
            "--draft-vocab-size {draft_vocab_size} must be between 1 and the target vocabulary ({target})"
        ))
        .into());
    }
    let counts = TokenCounts::from_build(&build).map_err(usage)?;
    let used = counts.select(draft_vocab_size, rule);
    let padded = used.iter().filter(|&&id| counts.count(id) == 0).count();
    let padding_share = vocab::padding_share(padded, draft_vocab_size);
    let mostly_padding = padding_share > vocab::MOSTLY_PADDING;
    let coverage = counts.coverage(&used);
    let map = VocabMap::new(used, target).map_err(usage)?;
    std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
    let files = vocab::write_vocab(out, &map, rule).map_err(usage)?;
    let mut sizes = coverage_sizes;
    if !sizes.contains(&draft_vocab_size) {
        sizes.push(draft_vocab_size);
    }
    sizes.sort_unstable();
    let table = vocab::coverage_table(&counts, &sizes, rule, target);
    let report = serde_json::json!({
        "rule": rule,
        "draft_vocab_size": draft_vocab_size,
        "target_vocab_size": target,
        "samples": counts.samples,
        "loss_tokens": counts.total,
        "distinct_loss_ids": counts.distinct(),
        "padded_ids": padded,
        "padding_share": padding_share,
        "mostly_padding": mostly_padding,
        "coverage": coverage,
        "coverage_table": table,
        "files": files,
    });
    write_json(&out.join(vocab::REPORT_FILE), &report)?;
    println!(
        "vocab ({rule:?} rule): {draft_vocab_size} of {target} ids from {} loss tokens ({} distinct, {padded} padded) → {}",
        counts.total,
        counts.distinct(),
        files.join(", ")
    );
    println!("{:>12}  {:>8}", "draft size", "coverage");
    for row in &table {
        println!(
            "{:>12}  {:>7.2}%",
            row.draft_vocab_size,
            row.coverage * 100.0
        );
    }
    if mostly_padding {
        eprintln!(
            "warning: {padded} of the {draft_vocab_size} draft ids ({:.1}%) are padding: the loss-masked tokens hold only {} distinct ids. \
             A smaller --draft-vocab-size (or more samples) gives the draft a vocabulary it is trained on.",
            padding_share * 100.0,
            counts.distinct()
        );
    }
    Ok(())
}

fn vocab_next_step(out: &Path, rule: Rule, draft_vocab_size: usize) -> Vec<String> {
    match rule {
        Rule::Specforge => {
            next_step::specforge_config(None, Some(&absolute(&out.join(vocab::SPECFORGE_FILE))))
        }
        Rule::Speculators => {
            let (d2t, t2d) = (
                absolute(&out.join(vocab::D2T_NPY)),
                absolute(&out.join(vocab::T2D_NPY)),
            );
            next_step::speculators_command(None, Some((&d2t, &t2d, draft_vocab_size)))
        }
    }
}
