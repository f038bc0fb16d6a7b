//! `draftgen init`: write a commented `draftgen.toml` for `draftgen run` — datasets, endpoint,
//! model, provider routing, reasoning, budget, timeouts, output — with every other setting
//! shown commented out at its default.

use std::path::PathBuf;
use std::process::ExitCode;

use super::UsageError;
use crate::api::ServerKind;
use crate::config::JobFile;

#[derive(clap::Args)]
pub struct Args {
    /// The file to write.
    #[arg(long, default_value = "draftgen.toml")]
    out: PathBuf,
    /// Dataset files or directories (comma-separated), relative to the config file.
    #[arg(long, value_delimiter = ',', default_value = "datasets")]
    datasets: Vec<String>,
    /// The endpoint's API root (draftgen appends /chat/completions).
    #[arg(long, default_value = "https://openrouter.ai/api/v1")]
    base_url: String,
    /// Server kind of --base-url: openrouter, vllm, sglang, llamacpp, generic (default: guessed).
    #[arg(long)]
    kind: Option<ServerKind>,
    /// The model id the endpoint knows.
    #[arg(long, default_value = "moonshotai/kimi-k2.5")]
    model: String,
    /// The target's tokenizer and chat template for build and verify (directory or known name).
    #[arg(long, default_value = "kimi-k2.5")]
    tokenizer: String,
    /// Replace an existing file.
    #[arg(long)]
    force: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.out.exists() && !args.force {
        return Err(UsageError(format!(
            "{} exists; edit it, or pass --force to replace it",
            args.out.display()
        ))
        .into());
    }
    let kind = args
        .kind
        .unwrap_or_else(|| ServerKind::guess(&args.base_url));
    let text = job_toml(&JobTemplate {
        datasets: &args.datasets,
        tokenizer: &args.tokenizer,
        out: "draftgen-out",
        endpoint_name: kind.name(),
        base_url: &args.base_url,
        kind,
        model: &args.model,
    });
    // What init writes, run reads: checked before it is written.
    JobFile::from_toml(&text, &args.out)
        .and_then(|file| file.run.validate())
        .map_err(|e| UsageError(format!("the generated config is invalid: {e}")))?;
    std::fs::write(&args.out, &text).map_err(|e| anyhow::anyhow!("{}: {e}", args.out.display()))?;
    eprintln!(
        "wrote {}: check the datasets, model, routing and budget, then run `draftgen run{}`",
        args.out.display(),
        if args.out == std::path::Path::new("draftgen.toml") {
            String::new()
        } else {
            format!(" --config {}", args.out.display())
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// A TOML string literal (JSON's syntax is valid TOML for these).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// What a job file says beyond its commented defaults: `init`'s flags, or the demo's settings.
pub(super) struct JobTemplate<'a> {
    pub datasets: &'a [String],
    pub tokenizer: &'a str,
    pub out: &'a str,
    pub endpoint_name: &'a str,
    pub base_url: &'a str,
    pub kind: ServerKind,
    pub model: &'a str,
}

/// The commented `draftgen.toml` that `init` writes (and `demo` fills for its simulator).
pub(super) fn job_toml(t: &JobTemplate) -> String {
    let datasets: Vec<String> = t.datasets.iter().map(|d| quoted(d)).collect();
    let kind = t.kind;
    let openrouter = kind == ServerKind::OpenRouter;
    let on = |yes: bool| if yes { "" } else { "# " };
    format!(
        r#"# draftgen.toml: the whole job. `draftgen run` reads it and runs
#   prepare -> generate -> build -> verify -> export,
# skipping each step whose output is current; run it again to resume after a stop.
# Relative paths are relative to this file. The API key is never written here: export
# OPENROUTER_API_KEY (OpenRouter), or set api_key_file / api_key_env on the endpoint.

grace_s = 30                              # after Ctrl-C or a budget stop: how long requests in flight may finish

[job]
datasets = [{datasets}]                   # JSONL / JSON / Parquet files, or directories of them
tokenizer = {tokenizer:<29} # the target's tokenizer + chat template: a directory or a known name
out = {out:<35} # prompts.jsonl, run/, build/, verify/, export/ go here
# limit = 1000                            # at most this many prompts in all
# limit_per_source = 500                  # at most this many from each dataset file
# samples_jsonl = false                   # build also writes build/samples.jsonl (one sample a line)
draft_vocab_size = 32000                  # size of the exported draft vocabulary (d2t / t2d)
trainers = ["specforge", "speculators"]   # whose files to export

[[endpoints]]
name = {name}
base_url = {base_url:<30} # the API root: draftgen appends /chat/completions
kind = {kind:<34} # openrouter | vllm | sglang | llamacpp | generic
# api_key_file = "~/.openrouter-key"      # default for openrouter: the OPENROUTER_API_KEY variable
# api_key_env = "MY_KEY_VARIABLE"
# weight = 1                              # share of requests, with several [[endpoints]]

[request]
model = {model:<33} # the id the endpoint knows (OpenRouter: add :exacto / :nitro as wanted)
max_tokens = 4096
# temperature = 1.0
# top_p = 1.0
# seed = 0
# stream = false
# Reasoning (OpenRouter): effort = "xhigh" | "high" | "medium" | "low" | "minimal" | "none",
# or max_tokens = N (not both); exclude = true drops it from answers.
{r}reasoning = {{ effort = "high" }}
# Provider routing (OpenRouter): `only` these providers (balanced between them), `order` to try
# first, `ignore` never; allow_fallbacks = false fails a request rather than send it elsewhere.
{r}provider = {{ only = ["moonshotai"], allow_fallbacks = false }}
# provider = {{ order = ["moonshotai", "fireworks"], ignore = ["chutes"], sort = "throughput" }}
# chat_template_kwargs = {{ thinking = true }}   # self-hosted servers

[budget]
max_cost_usd = 10.0                       # stop scheduling before the run (all sessions) would cost more
# prompt_usd_per_mtok = 0.60              # price table for answers whose server reports no usage.cost
# completion_usd_per_mtok = 2.50

[concurrency]
initial = 64                              # requests in flight to start from; adapts to what the server accepts
max = 1024
# requests_per_minute = 600

[timeouts]                                # seconds
connect_s = 10
first_byte_s = 300
idle_s = 120
total_s = 1800

[retry]
max_attempts = 6                          # per prompt per session
"#,
        datasets = datasets.join(", "),
        tokenizer = quoted(t.tokenizer),
        out = quoted(t.out),
        name = quoted(t.endpoint_name),
        base_url = quoted(t.base_url),
        kind = quoted(kind.name()),
        model = quoted(t.model),
        r = on(openrouter),
    )
}
