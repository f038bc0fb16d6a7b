//! `draftgen probe`: ask each provider of a model (or each `--base-url`) the probe's fixed
//! scenarios; print the table (or `--json`) with the server shape that explains the answers.
//!
//! Exit codes: 0 the probe ran and some target answered; 1 no target answered anything; 2 bad
//! usage or input.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::model_args::ModelArgs;
use super::{finished, UsageError};
use crate::api::{ApiKey, Client, ClientConfig, Endpoint, Timeouts};
use crate::dataset::Prompt;
use crate::probe::{self, ProbeOptions, Target};

const OPENROUTER: &str = "https://openrouter.ai/api/v1";

#[derive(clap::Args)]
#[command(after_help = "\
Keys come from OPENROUTER_API_KEY (OpenRouter) or --api-key-file; they never appear in the output.
Without --base-url the target is OpenRouter; without --providers, each endpoint OpenRouter lists
for the model (GET /models/AUTHOR/SLUG/endpoints) is probed on its own (provider.only with its
tag, no fallbacks). --openrouter treats each --base-url as OpenRouter (a proxy, the simulator).")]
pub struct Args {
    /// Model id sent in every request (e.g. moonshotai/kimi-k2.5).
    #[arg(long)]
    model: String,
    /// A server to probe, base URL up to /v1 (repeat for several). Default: OpenRouter.
    #[arg(long = "base-url", value_name = "URL")]
    base_urls: Vec<String>,
    /// OpenRouter providers to probe one at a time, comma-separated (e.g. fireworks,groq).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    providers: Vec<String>,
    /// Every --base-url is OpenRouter (or speaks its API): list the model's providers there.
    #[arg(long)]
    openrouter: bool,
    /// prompts.jsonl: its first prompt is sent as the `real_prompt` scenario.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// The model's tokenizer (directory or known name): `usage.prompt_tokens` is compared with
    /// our render of each request.
    #[arg(long, value_name = "DIR|NAME")]
    tokenizer: Option<String>,
    /// Profile for --tokenizer (auto-detected when absent).
    #[arg(long)]
    profile: Option<String>,
    /// File holding the API key (first line).
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// Seconds each request may take in all.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// max_tokens of every request.
    #[arg(long, default_value_t = 256)]
    max_tokens: u32,
    /// Print the report as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    json: bool,
}

fn first_prompt(path: &PathBuf) -> Result<Prompt, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("{}: cannot open: {e}", path.display())))?;
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| UsageError(format!("{}:{}: {e}", path.display(), n + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        return serde_json::from_str(&line).map_err(|e| {
            UsageError(format!(
                "{}:{}: not a prompt (expected a line written by `draftgen prepare`): {e}",
                path.display(),
                n + 1
            ))
        });
    }
    Err(UsageError(format!("{}: no prompt in it", path.display())))
}

fn api_key(args: &Args, openrouter: bool) -> Result<Option<ApiKey>, UsageError> {
    if let Some(path) = &args.api_key_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("{}: cannot read the key: {e}", path.display())))?;
        let key = text.lines().next().unwrap_or_default().trim().to_string();
        if key.is_empty() {
            return Err(UsageError(format!(
                "{}: the first line is empty",
                path.display()
            )));
        }
        return Ok(Some(ApiKey::new(key)));
    }
    Ok(openrouter
        .then(|| std::env::var("OPENROUTER_API_KEY").ok())
        .flatten()
        .filter(|k| !k.trim().is_empty())
        .map(|k| ApiKey::new(k.trim())))
}

/// The endpoints OpenRouter lists for `model` (empty, with a warning, if the list cannot be had).
async fn openrouter_providers(
    client: &Client,
    endpoint: &Endpoint,
    model: &str,
) -> Vec<probe::providers::Listed> {
    match probe::providers::list(client, endpoint, model).await {
        Ok(listed) => listed,
        Err(e) => {
            eprintln!("probe: cannot list the model's providers ({e}); probing default routing");
            Vec::new()
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(UsageError("--timeout must be a positive number of seconds".into()).into());
    }
    let real_prompt = args.prompts.as_ref().map(first_prompt).transpose()?;
    let profile = match &args.tokenizer {
        Some(model) => Some(
            ModelArgs {
                model: model.clone(),
                profile: args.profile.clone(),
                chat_template: None,
            }
            .load()?,
        ),
        None => None,
    };
    let timeouts = probe_timeouts(args.timeout);
    let client = Client::new(ClientConfig {
        connect_timeout: timeouts.connect,
        ..ClientConfig::default()
    })
    .context("cannot build the HTTP client")?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(async {
        let targets = targets(&args, &client).await?;
        let options = ProbeOptions {
            model: args.model.clone(),
            max_tokens: args.max_tokens,
            timeouts,
            real_prompt,
            profile: profile.as_ref(),
        };
        Ok::<_, UsageError>(probe::probe(&client, &targets, &options).await)
    })?;
    print_report(&report, args.json)?;
    let answered = report.targets.iter().any(|t| t.answered > 0);
    Ok(finished(answered))
}

/// `--timeout` bounds each request as a whole; connecting gets at most 10 s of it.
fn probe_timeouts(seconds: f64) -> Timeouts {
    let total = Duration::from_secs_f64(seconds);
    Timeouts {
        connect: total.min(Duration::from_secs(10)),
        first_byte: total,
        idle: total,
        total,
    }
}

/// Every target to probe: each `--base-url` (OpenRouter by default) once, or once per provider
/// when providers are named or listed there.
async fn targets(args: &Args, client: &Client) -> Result<Vec<Target>, UsageError> {
    let base_urls = if args.base_urls.is_empty() {
        vec![OPENROUTER.to_string()]
    } else {
        args.base_urls.clone()
    };
    let mut targets = Vec::new();
    for base_url in &base_urls {
        let openrouter =
            args.openrouter || base_url.contains("openrouter.ai") || !args.providers.is_empty();
        let api_key = api_key(args, openrouter)?;
        // OpenRouter's own API answers every scenario with 401 without a key: say so once.
        if api_key.is_none() && crate::config::is_openrouter_api(base_url) {
            return Err(UsageError(crate::config::no_key_message(
                crate::config::OPENROUTER_KEY_ENV,
                base_url,
            )));
        }
        let endpoint = Endpoint {
            name: base_url.clone(),
            base_url: base_url.clone(),
            api_key,
            weight: 1,
        };
        let providers = if !args.providers.is_empty() {
            named_providers(&args.providers)
        } else if openrouter {
            openrouter_providers(client, &endpoint, &args.model).await
        } else {
            Vec::new()
        };
        if providers.is_empty() {
            targets.push(Target {
                name: base_url.clone(),
                endpoint,
                provider: None,
                quantization: None,
                openrouter,
            });
        } else {
            for listed in providers {
                targets.push(Target {
                    name: listed.name,
                    endpoint: endpoint.clone(),
                    provider: Some(listed.slug),
                    quantization: listed.quantization,
                    openrouter: true,
                });
            }
        }
    }
    Ok(targets)
}

/// `--providers` as listed endpoints: each tag is both the shown name and the routing slug.
fn named_providers(providers: &[String]) -> Vec<probe::providers::Listed> {
    providers
        .iter()
        .map(|p| probe::providers::Listed {
            name: p.clone(),
            slug: p.clone(),
            quantization: None,
        })
        .collect()
}

/// The table on stdout, or with `--json` the JSON on stdout and the table on stderr.
fn print_report(report: &probe::ProbeReport, json: bool) -> anyhow::Result<()> {
    let table = report.terminal_table();
    if json {
        eprint!("{table}");
        println!(
            "{}",
            serde_json::to_string_pretty(report).context("cannot serialize the report")?
        );
    } else {
        print!("{table}");
    }
    Ok(())
}
