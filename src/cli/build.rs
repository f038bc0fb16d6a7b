//! `draftgen build`: a run directory → Parquet shards (+ `--jsonl`) and `build.json`.
//!
//! Exit codes: 0 every successful record became a sample or was dropped by a policy; 1 some
//! records could not be built or journal lines were unreadable (the rest is written, the summary
//! names them); 2 bad flags, no such run or model; 3 (`--require-complete`) the run is not
//! finished — prompts without an answer, or a writer still appending — and nothing was built.
//! Without the flag an unfinished run is built and said to be unfinished (and `build.json`
//! records it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use super::model_args::ModelArgs;
use super::{finished, print_json, UsageError};
use crate::build::{
    self, BuildConfig, BuildError, BuildSummary, LengthPolicy, OverLength, Policies,
    ProviderReport, ShardLimits,
};
use crate::model::assets;

#[derive(clap::Args)]
#[command(after_help = "\
Defaults: answers cut by max_tokens (finish_reason length) are kept; samples of fidelity class
inconsistent are dropped and every other class kept; no maximum length.")]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// The run directory written by `generate` (or `import`).
    #[arg(long)]
    run: PathBuf,
    /// Output directory (created): samples-NNNNN.parquet, build.json, samples.jsonl with --jsonl.
    #[arg(long)]
    out: PathBuf,
    /// Also write samples.jsonl (the same fields, one object per line).
    #[arg(long)]
    jsonl: bool,
    /// prompts.jsonl of the run, to fill each sample's `source`.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Answers cut by max_tokens: keep or drop.
    #[arg(long, value_enum, default_value = "keep")]
    length: LengthPolicy,
    /// Fidelity classes to drop, comma-separated (`none` keeps all): exact_by_server_ids, unique,
    /// truncated_mid_character, ambiguous, lossy, inconsistent.
    #[arg(long, default_value = "inconsistent")]
    drop_class: String,
    /// Maximum total tokens per sample (prompt + completion).
    #[arg(long)]
    max_len: Option<usize>,
    /// Samples over --max-len: drop, or cut (ids and mask cut together).
    #[arg(long, value_enum, default_value = "drop")]
    over_length: OverLength,
    /// The server put a space on each side of special tokens (when the run's manifest does not say).
    #[arg(long)]
    spaces_around_special_tokens: bool,
    /// Journal records per batch (memory is bounded by a batch).
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    /// Rows per Parquet shard.
    #[arg(long, default_value_t = 200_000)]
    shard_rows: usize,
    /// Rows per Parquet row group.
    #[arg(long, default_value_t = 1024)]
    row_group_rows: usize,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Refuse (exit 3, nothing built) while the run is unfinished: prompts without an answer or
    /// a writer still appending. Without it an unfinished run is built with a warning.
    #[arg(long)]
    require_complete: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let drop_classes = Policies::parse_classes(&args.drop_class).map_err(UsageError)?;
    if args.max_len == Some(0) || args.shard_rows == 0 || args.row_group_rows == 0 {
        return Err(UsageError(
            "--max-len, --shard-rows and --row-group-rows must be at least 1".into(),
        )
        .into());
    }
    if args.require_complete {
        if let Some(code) = refuse_incomplete(&args.run, "build") {
            return Ok(code);
        }
    }
    let model_dir =
        assets::resolve_model(&args.model.model).map_err(|e| UsageError(e.to_string()))?;
    let profile = args.model.load()?;
    let config = BuildConfig {
        profile: &profile,
        model_dir: &model_dir,
        model_name: &args.model.model,
        run: &args.run,
        out: &args.out,
        policies: Policies {
            length: args.length,
            drop_classes,
            max_len: args.max_len,
            over_length: args.over_length,
        },
        spaces_around_special_tokens: args.spaces_around_special_tokens,
        prompts: args.prompts.as_deref(),
        jsonl: args.jsonl,
        batch: args.batch,
        limits: ShardLimits {
            rows_per_shard: args.shard_rows,
            rows_per_group: args.row_group_rows,
            ..ShardLimits::default()
        },
    };
    let summary = match build::build(&config) {
        Ok(summary) => summary,
        Err(e @ (BuildError::NotARun(_) | BuildError::BadInput { .. })) => {
            return Err(UsageError(e.to_string()).into())
        }
        Err(e) => return Err(e.into()),
    };
    print_human(&summary, &config.policies);
    if args.json {
        print_json(&summary)?;
    }
    Ok(finished(summary.all_ok()))
}

/// `--require-complete`: the exit code refusing an unfinished run at `run` (said on stderr), or
/// `None` when it is finished (or is no run: the command says so itself).
pub(super) fn refuse_incomplete(run: &std::path::Path, command: &str) -> Option<ExitCode> {
    let completeness = crate::journal::Completeness::of(run)?;
    let shortfall = completeness.shortfall()?;
    eprintln!("{command}: refused (--require-complete): {shortfall}");
    Some(ExitCode::from(INCOMPLETE_EXIT))
}

/// Exit code of `build` and `verify` refusing an unfinished run (`--require-complete`).
pub(super) const INCOMPLETE_EXIT: u8 = 3;

/// The warning that what was built is not the whole run.
fn print_completeness(s: &BuildSummary) {
    match s.completeness.as_ref().map(|c| (c, c.shortfall())) {
        Some((_, Some(shortfall))) => eprintln!(
            "  warning: {shortfall} — the samples are not the whole run (recorded in build.json; --require-complete refuses)"
        ),
        Some((c, None)) => eprintln!(
            "  run complete: every one of its {} prompt(s) answered",
            c.prompts.unwrap_or(c.answered)
        ),
        None => eprintln!("  warning: could not tell whether the run is complete"),
    }
}

fn print_human(s: &BuildSummary, policies: &Policies) {
    let c = &s.counts;
    let dropped: u64 = c.dropped_by_reason.values().sum();
    eprintln!(
        "build: {} sample(s) from {} successful record(s), {} dropped; {} prompt + {} completion tokens",
        c.samples, c.records, dropped, c.prompt_tokens, c.completion_tokens
    );
    if !c.dropped_by_reason.is_empty() {
        eprintln!("  dropped: {}", tally(&c.dropped_by_reason));
    }
    eprintln!("  kept by fidelity class: {}", tally(&c.per_fidelity_class));
    let dropped_classes: Vec<&str> = policies.drop_classes.iter().map(|c| c.name()).collect();
    eprintln!(
        "  policies: length answers {}, fidelity classes dropped: {}, max length {}",
        match policies.length {
            LengthPolicy::Keep => "kept",
            LengthPolicy::Drop => "dropped",
        },
        if dropped_classes.is_empty() {
            "none (all kept)".to_string()
        } else {
            format!("{} (all others kept)", dropped_classes.join(","))
        },
        match policies.max_len {
            None => "none".to_string(),
            Some(n) => format!(
                "{n} ({} over it; {} cut)",
                match policies.over_length {
                    OverLength::Drop => "drop",
                    OverLength::Cut => "cut",
                },
                c.cut
            ),
        }
    );
    if c.samples > 0 && c.with_server_ids == 0 {
        eprintln!("  no record has server token ids: every sample was rebuilt from text");
    } else if c.samples > 0 {
        eprintln!(
            "  {} sample(s) with the server's own ids, {} rebuilt from text",
            c.with_server_ids, c.rebuilt_from_text
        );
    }
    if c.multi_turn > 0 {
        eprintln!("  {} multi-turn sample(s)", c.multi_turn);
    }
    for group in s.providers.iter().filter(|g| g.evidence_answers > 0) {
        eprintln!("  {}", provider_line(group));
    }
    for problem in &s.problems {
        eprintln!("  error: {problem}");
    }
    if s.failures as usize > s.problems.len() {
        eprintln!("  … and {} more", s.failures as usize - s.problems.len());
    }
    print_completeness(s);
    let files: Vec<&str> = s.shards.iter().map(|sh| sh.file.as_str()).collect();
    eprintln!(
        "  wrote {} ({}) and {}",
        s.out.display(),
        files.join(", "),
        build::BUILD_JSON
    );
}

/// One provider group: its answers and the conventions inferred from them, with the evidence.
fn provider_line(group: &ProviderReport) -> String {
    let who = match &group.provider {
        Some(provider) => format!("provider {provider} ({})", group.endpoint),
        None => format!("endpoint {}", group.endpoint),
    };
    let conventions = if group.conventions.is_empty() {
        "no convention inferred".to_string()
    } else {
        let each: Vec<String> = group
            .conventions
            .iter()
            .map(|c| format!("{} ({})", c.name, c.evidence))
            .collect();
        format!("rebuilt with {}", each.join(", "))
    };
    format!(
        "{who}: {} answer(s), {} read for evidence; {conventions}",
        group.answers, group.evidence_answers
    )
}

/// `name=count` for each entry, space-separated.
fn tally(counts: &BTreeMap<String, u64>) -> String {
    let entries: Vec<String> = counts
        .iter()
        .map(|(name, n)| format!("{name}={n}"))
        .collect();
    entries.join(" ")
}
