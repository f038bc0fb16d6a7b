//! `draftgen verify`: a run (or build) directory → terminal summary, `verify.json`, `report.html`.
//!
//! Exit codes: 0 verification passed; 1 a sample is divergent from the reference ids, of
//! fidelity class inconsistent, or could not be checked (and, with `--strict-tools`, a tool-call
//! red flag); 2 bad flags, no such directory, model or reference file; 3 (`--require-complete`)
//! the run is unfinished (prompts without an answer, or a writer still appending). Without the
//! flag an unfinished run is verified and said to be unfinished (verify.json `completeness`).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use super::model_args::ModelArgs;
use super::{finished, print_json, UsageError};
use crate::reconstruct::FidelityClass;
use crate::verify::trust::counted;
use crate::verify::{self, GroupFigures, Verdict, VerifyConfig, VerifyError, VerifyReport};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// The run directory written by `generate` (or a build directory written by `build`).
    #[arg(long)]
    run: PathBuf,
    /// Reference completion ids, one `{"id": …, "output_ids": [...]}` per line (e.g. an earlier
    /// local SGLang/vLLM run); overrides the server ids in the journal.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Where to write verify.json and report.html (default: the --run directory).
    #[arg(long)]
    out: Option<PathBuf>,
    /// prompts.jsonl to take sources from for records that do not carry theirs (default: the
    /// prompts file the run's manifest recorded, if unchanged).
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// A second run on the same prompts (another provider, the official API): the tool-call
    /// audit's trigger F1 and schema accuracy.
    #[arg(long)]
    tools_reference_run: Option<PathBuf>,
    /// Tool-call red flags (datasets whose tools never trigger, providers below
    /// K2-Vendor-Verifier's thresholds) fail verification too.
    #[arg(long)]
    strict_tools: bool,
    /// Print verify.json on stdout (the summary then goes to stderr).
    #[arg(long)]
    json: bool,
    /// Refuse (exit 3) while the run is unfinished: prompts without an answer or a writer still
    /// appending. Without it an unfinished run is verified with a warning.
    #[arg(long)]
    require_complete: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.run.is_dir() {
        return Err(UsageError(format!("{}: no such directory", args.run.display())).into());
    }
    let run_dir = run_of(&args.run);
    if args.require_complete {
        if let Some(code) = super::build::refuse_incomplete(&run_dir, "verify") {
            return Ok(code);
        }
    }
    let profile = args.model.load()?;
    let config = VerifyConfig {
        profile: &profile,
        model_name: &args.model.model,
        input: &args.run,
        reference: args.reference.as_deref(),
        prompts: args.prompts.as_deref(),
        tools_reference_run: args.tools_reference_run.as_deref(),
        strict_tools: args.strict_tools,
        progress: std::io::stderr().is_terminal(),
    };
    let mut report = match verify::verify(&config) {
        Ok(report) => report,
        Err(e @ VerifyError::Input(_)) => return Err(UsageError(e.to_string()).into()),
        Err(e @ VerifyError::Io { .. }) if args.reference.is_some() => {
            return Err(UsageError(e.to_string()).into())
        }
        Err(e) => return Err(e.into()),
    };
    report.completeness = crate::journal::Completeness::of(&run_dir);
    let out = args.out.clone().unwrap_or_else(|| args.run.clone());
    let (json_path, html_path) = verify::write(&report, &out)?;
    let colour = if args.json {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    } && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut text = summary(&report, colour);
    completeness_lines(&mut text, &report, &run_dir);
    let _ = writeln!(
        text,
        "wrote {} and {}",
        json_path.display(),
        html_path.display()
    );
    if args.json {
        eprint!("{text}");
        print_json(&report)?;
    } else {
        print!("{text}");
    }
    Ok(finished(report.gate.ok))
}

/// The run directory behind `input`: itself, or the run a build directory's build.json names.
fn run_of(input: &std::path::Path) -> PathBuf {
    if input.join(crate::journal::JOURNAL_DIR).is_dir() {
        return input.to_path_buf();
    }
    std::fs::read(input.join(crate::build::BUILD_JSON))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|info| info.get("run")?.as_str().map(PathBuf::from))
        .unwrap_or_else(|| input.to_path_buf())
}

/// Whether the run is finished, and its failed attempts per endpoint and provider (summary.json).
fn completeness_lines(s: &mut String, r: &VerifyReport, run_dir: &std::path::Path) {
    match r.completeness.as_ref().map(|c| c.shortfall()) {
        Some(Some(shortfall)) => {
            let _ = writeln!(
                s,
                "  warning: {shortfall} — what was verified is not the whole run (--require-complete refuses)"
            );
        }
        Some(None) => {}
        None => {
            let _ = writeln!(s, "  warning: could not tell whether the run is complete");
        }
    }
    let Some(summary) = crate::journal::RunDir::new(run_dir).read_summary() else {
        return;
    };
    for f in summary.by_provider.iter().filter(|f| f.failed_attempts > 0) {
        let classes: Vec<String> = f
            .failed_by_error_class
            .iter()
            .map(|(c, n)| format!("{}={n}", crate::engine::class_name(*c)))
            .collect();
        let _ = writeln!(
            s,
            "  failed attempts, {}: {} of {} ({})",
            f.who(),
            f.failed_attempts,
            f.attempts,
            classes.join(" ")
        );
    }
}

fn red(text: &str, colour: bool) -> String {
    if colour {
        format!("\x1b[31m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn percent(n: u64, of: u64) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

/// The terminal summary.
pub fn summary(r: &VerifyReport, colour: bool) -> String {
    let mut s = String::new();
    fidelity_lines(&mut s, r);
    trust_lines(&mut s, r, colour);
    reference_line(&mut s, r);
    usage_lines(&mut s, r);
    group_tables(&mut s, r);
    provider_lines(&mut s, r, colour);
    findings(&mut s, r, colour);
    s
}

/// Inconsistent samples listed by name in the terminal (verify.json has the first 100).
const LISTED_INCONSISTENT: usize = 10;

/// Every class with its share and reasons counted, what build drops, the inconsistent samples.
fn trust_lines(s: &mut String, r: &VerifyReport, colour: bool) {
    for class in FidelityClass::ALL {
        let n = r
            .samples
            .by_fidelity
            .get(class.name())
            .copied()
            .unwrap_or(0);
        if n == 0 {
            continue;
        }
        let reasons = r
            .fidelity_reasons
            .get(class.name())
            .map(|m| format!("  reasons: {}", counted(m.iter())))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "    {:<24} {:>7} {:>7}{reasons}",
            class.name(),
            n,
            percent(n, r.samples.total)
        );
    }
    let _ = writeln!(s, "  build      {}", r.build_drops.note);
    for i in r.inconsistent_samples.iter().take(LISTED_INCONSISTENT) {
        let _ = writeln!(
            s,
            "  {} {}{}: {} — {}",
            red("inconsistent", colour),
            i.id,
            i.provider
                .as_deref()
                .map_or_else(String::new, |p| format!(" ({p})")),
            if i.reasons.is_empty() {
                "no reason recorded".to_string()
            } else {
                i.reasons.join(", ")
            },
            i.first_difference
        );
    }
    let total = r
        .samples
        .by_fidelity
        .get(FidelityClass::Inconsistent.name())
        .copied()
        .unwrap_or(0);
    if total as usize > LISTED_INCONSISTENT {
        let _ = writeln!(
            s,
            "  … {} more inconsistent sample(s) in verify.json (inconsistent_samples)",
            total as usize - LISTED_INCONSISTENT.min(r.inconsistent_samples.len())
        );
    }
}

/// The provider table with verdicts, the routing line, and the provider behind the failures.
fn provider_lines(s: &mut String, r: &VerifyReport, colour: bool) {
    if r.providers.rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "  {:<24} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  verdict",
        "providers", "answers", "failed", "exact", "ambig.", "lossy", "dropped"
    );
    for p in &r.providers.rows {
        let verdict = match p.verdict {
            Verdict::Use => p.verdict.name().to_string(),
            Verdict::Avoid => red(p.verdict.name(), colour),
        };
        let _ = writeln!(
            s,
            "    {:<22} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  {verdict}: {}",
            truncate(&p.provider, 22),
            p.answers,
            p.failed,
            percent(p.exact, p.samples),
            percent(p.ambiguous, p.samples),
            percent(p.lossy, p.samples),
            percent(p.dropped, p.samples),
            p.reason
        );
        if !p.failures_by_class.is_empty() {
            let _ = writeln!(s, "      failures: {}", counted(p.failures_by_class.iter()));
        }
        for c in &p.conventions {
            let _ = writeln!(s, "      convention {}: {}", c.name, c.evidence);
        }
        if let Some(form) = &p.call_id_form {
            let _ = writeln!(
                s,
                "      tool calls: {} of {} exact; ids {form}",
                p.tool_call_exact, p.tool_call_samples
            );
        }
    }
    let f = &r.failures;
    match &f.caused_by {
        Some(cause) => {
            let failed = f.by_provider.get(cause).map_or(0, |a| a.failed);
            let _ = writeln!(
                s,
                "  failures   {} of {} failed attempt(s) came from {cause} (its verdict and the routing line above say whether to route around it)",
                failed, f.total
            );
        }
        None if f.total > 0 => {
            let _ = writeln!(
                s,
                "  failures   {} failed attempt(s) ({}), no one provider behind most; per endpoint: {}",
                f.total,
                counted(f.by_class.iter()),
                counted(f.by_endpoint.iter())
            );
        }
        None => {}
    }
    if let Some(line) = &r.providers.routing {
        let _ = writeln!(s, "  routing    paste into the run config: {line}");
    }
}

/// What was verified, and the samples per fidelity class.
fn fidelity_lines(s: &mut String, r: &VerifyReport) {
    let _ = writeln!(
        s,
        "verify  {} ({}): {} sample(s), model {}",
        r.run, r.input, r.samples.total, r.model
    );
    let classes: Vec<String> = FidelityClass::ALL
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c.name(),
                r.samples.by_fidelity.get(c.name()).copied().unwrap_or(0)
            )
        })
        .collect();
    let _ = writeln!(s, "  fidelity   {}", classes.join(" · "));
}

/// The reference compare's counts.
fn reference_line(s: &mut String, r: &VerifyReport) {
    let f = &r.reference;
    if f.compared > 0 {
        let source = serde_json::to_value(f.source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  reference  {} compared ({source}): {} exact, {} bpe-benign, {} truncated mid-character, {} divergent; {} without reference",
            f.compared, f.exact, f.bpe_benign, f.truncated_mid_character, f.divergent, f.without_reference
        );
    } else {
        let _ = writeln!(
            s,
            "  reference  none (no server ids in the journal; pass --reference FILE to compare)"
        );
    }
}

/// Reported usage against the rebuilt counts.
fn usage_lines(s: &mut String, r: &VerifyReport) {
    for (name, u) in [
        ("prompt_tokens", &r.usage.prompt_tokens),
        ("completion_tokens", &r.usage.completion_tokens),
    ] {
        if u.compared == 0 {
            let _ = writeln!(s, "  usage      {name}: not reported");
            continue;
        }
        let hist: Vec<String> = u
            .sorted()
            .iter()
            .take(12)
            .map(|(d, n)| format!("{d:+}:{n}"))
            .collect();
        let _ = writeln!(
            s,
            "  usage      {name}: {} compared, {} equal ({}); reported−rebuilt {}",
            u.compared,
            u.equal,
            percent(u.equal, u.compared),
            hist.join(" ")
        );
    }
    if r.usage.prompt_tokens.compared > 0 {
        let _ = writeln!(
            s,
            "             prompt_tokens within Kimi-Vendor-Verifier's band (expected ≤ reported ≤ expected+3): {}/{}",
            r.usage.prompt_tokens_within_kvv_band, r.usage.prompt_tokens.compared
        );
    }
}

/// The figures per source and per provider.
fn group_tables(s: &mut String, r: &VerifyReport) {
    for (title, groups) in [("source", &r.by_source), ("provider", &r.by_provider)] {
        let _ = writeln!(
            s,
            "  {:<24} {:>8} {:>8} {:>10} {:>10} {:>12} {:>10}",
            format!("per {title}"),
            "samples",
            "exact",
            "divergent",
            "inconsist.",
            "bpe-benign",
            "prompt Δ=0"
        );
        for (name, g) in groups.iter() {
            let _ = writeln!(s, "{}", group_line(name, g));
        }
    }
}

/// The tool-call audit, the first divergent samples and problems, and the gate.
fn findings(s: &mut String, r: &VerifyReport, colour: bool) {
    let exact: Vec<String> = r
        .by_provider
        .iter()
        .filter(|(_, g)| g.tool_call_samples > 0)
        .map(|(name, g)| {
            format!(
                "{name} {}/{} ({})",
                g.tool_call_exact,
                g.tool_call_samples,
                percent(g.tool_call_exact, g.tool_call_samples)
            )
        })
        .collect();
    if !exact.is_empty() {
        let _ = writeln!(s, "  tool calls rebuilt exactly: {}", exact.join(" · "));
    }
    let table = r.tool_calls.terminal_table();
    if !table.trim().is_empty() {
        let _ = writeln!(s, "  tool calls\n{table}");
    }
    for flag in r.tool_calls.red_flags() {
        let _ = writeln!(s, "  {}", red(&format!("tool calls: {flag}"), colour));
    }
    for d in r.reference.divergent_samples.iter().take(5) {
        let _ = writeln!(
            s,
            "  {} {} at token {}:\n      ours      {:?}\n      reference {:?}",
            red("divergent", colour),
            d.id,
            d.position,
            d.ours,
            d.reference
        );
    }
    for p in r.problems.iter().take(5) {
        let _ = writeln!(s, "  problem    {p}");
    }
    if r.gate.ok {
        let _ = writeln!(s, "  gate       ok");
    } else {
        let _ = writeln!(
            s,
            "  gate       {}",
            red(&format!("FAILED: {}", r.gate.reasons.join("; ")), colour)
        );
    }
}

fn group_line(name: &str, g: &GroupFigures) -> String {
    let exact = g.class(FidelityClass::ExactByServerIds) + g.class(FidelityClass::Unique);
    format!(
        "    {:<22} {:>8} {:>8} {:>10} {:>10} {:>12} {:>10}",
        truncate(name, 22),
        g.samples,
        percent(exact, g.samples),
        g.reference.divergent,
        g.class(FidelityClass::Inconsistent),
        g.reference.bpe_benign,
        if g.usage.prompt_tokens.compared == 0 {
            "-".to_string()
        } else {
            percent(g.usage.prompt_tokens.equal, g.usage.prompt_tokens.compared)
        }
    )
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
