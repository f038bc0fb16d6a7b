//! The command line: clap parsing, one subcommand per file, no pipeline logic here.
//!
//! Exit codes: 0 ok, 1 failure, 2 bad usage or input.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod build;
mod demo;
mod demo_model;
mod export;
mod generate;
mod import;
mod init;
mod io;
mod model_args;
mod prepare;
mod probe;
mod reconstruct;
mod render;
mod run;
mod sim;
mod tokenize;
mod verify;

#[derive(Parser)]
#[command(
    name = "draftgen",
    version,
    about = "Token-exact EAGLE-3 draft-model training data from OpenAI-compatible APIs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Tokenize text with a model's tokenizer (special-token literals become special ids).
    Tokenize(tokenize::Args),
    /// Render conversations with a model's chat template, as text and ids.
    Render(render::Args),
    /// Rebuild exact prompt and completion ids from a request and the server's answer.
    Reconstruct(reconstruct::Args),
    /// Read datasets into prompts.jsonl.
    Prepare(prepare::Args),
    /// Generate answers through an OpenAI-compatible endpoint into a run directory.
    Generate(Box<generate::Args>),
    /// Build training samples (Parquet shards, build.json) from a run directory.
    Build(Box<build::Args>),
    /// Record earlier local generations (with output ids) in a run directory as finished work.
    Import(Box<import::Args>),
    /// Run the built-in OpenAI-compatible simulator.
    Sim(Box<sim::Args>),
    /// Run the whole pipeline on bundled samples against an in-process simulator.
    Demo(demo::Args),
    /// Ask each provider (or server) of a model a fixed set of scenarios; say which --kind fits.
    Probe(Box<probe::Args>),
    /// Write trainer files (SpecForge, speculators) and the draft vocabulary from a build.
    Export(export::Args),
    /// Check a run's token fidelity, usage and tool calls; write verify.json and report.html.
    Verify(Box<verify::Args>),
    /// Write a commented draftgen.toml (datasets, endpoint, model, routing, budget) for `run`.
    Init(init::Args),
    /// The whole job from draftgen.toml: prepare, generate, build, verify, export (resumable;
    /// steps whose output is current are skipped).
    Run(run::Args),
}

/// An error caused by the user's input or flags: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Parse arguments, run the command, map errors to exit codes.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Run one subcommand as if typed after `draftgen` (how `run` drives each step).
fn run_subcommand(args: &[std::ffi::OsString]) -> anyhow::Result<ExitCode> {
    let argv = std::iter::once(std::ffi::OsString::from("draftgen")).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| UsageError(e.to_string()))?;
    dispatch(cli.command)
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Tokenize(args) => tokenize::run(args),
        Command::Render(args) => render::run(args),
        Command::Reconstruct(args) => reconstruct::run(args),
        Command::Prepare(args) => prepare::run(args),
        Command::Generate(args) => generate::run(*args),
        Command::Build(args) => build::run(*args),
        Command::Import(args) => import::run(*args),
        Command::Sim(args) => sim::run(*args),
        Command::Demo(args) => demo::run(args),
        Command::Export(args) => export::run(args),
        Command::Probe(args) => probe::run(*args),
        Command::Verify(args) => verify::run(*args),
        Command::Init(args) => init::run(args),
        Command::Run(args) => run::run(args),
    }
}

/// The exit code of a command that ran to its end: 0 when it did all it was asked, else 1 (it
/// has said what failed).
fn finished(all_ok: bool) -> ExitCode {
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--json`: a command's summary as pretty JSON on stdout.
fn print_json(summary: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(summary)?);
    Ok(())
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DRAFTGEN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr(
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            std::env::var_os("NO_COLOR"),
        ))
        .try_init();
}

/// Colours only for a person at a terminal: never into a file or pipe (logs, CI), and never when
/// `NO_COLOR` is set to anything non-empty (<https://no-color.org>).
fn colour_on_stderr(is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        use super::colour_on_stderr as colour;
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
