//! `draftgen sim`: run the built-in OpenAI-compatible simulator until Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::model_args::{implied_profile, request_model_name};
use crate::cli::UsageError;
use crate::model::assets;
use crate::sim::{
    CapacityConfig, FaultKind, FaultRates, Flavor, Latency, NamedProvider, Replay, SimConfig,
    Simulator,
};

#[derive(clap::Args)]
pub struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8089)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Response shape: openrouter, vllm, vllm-0.11, sglang, llamacpp or raw (one per server kind,
    /// answering through that kind's shape in `server`).
    #[arg(long, default_value = "openrouter")]
    flavor: Flavor,
    /// A model directory or a known name such as `kimi-k2.5` (as for every other command: its
    /// tokenizer counts tokens and gives token ids), a family's profile name or a model id of it
    /// (`qwen3-coder`, `meta-llama/llama-3.1-70b-instruct`: its tokenizer files are looked for as
    /// `draftgen demo` does), or any other model name (counts are then whitespace-separated
    /// pieces).
    #[arg(long)]
    model: Option<String>,
    /// Seed: every answer and fault is a pure function of it and the request.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Set every fault rate to R (rates summing above 0.9 are scaled down together).
    #[arg(long, value_name = "R")]
    faults_all: Option<f64>,
    /// Share of attempts answered 429 with Retry-After.
    #[arg(long, value_name = "R")]
    fault_429: Option<f64>,
    /// Share of attempts answered 500/502/503.
    #[arg(long, value_name = "R")]
    fault_5xx: Option<f64>,
    /// Share of attempts that hang (mid-stream when streaming).
    #[arg(long, value_name = "R")]
    fault_hang: Option<f64>,
    /// Share of attempts ending with a mid-stream error chunk.
    #[arg(long, value_name = "R")]
    fault_midstream: Option<f64>,
    /// Share of attempts answered 200 with an error object.
    #[arg(long, value_name = "R")]
    fault_error200: Option<f64>,
    /// Share of attempts answered with invalid JSON.
    #[arg(long, value_name = "R")]
    fault_malformed: Option<f64>,
    /// Share of attempts whose connection drops halfway through the body.
    #[arg(long, value_name = "R")]
    fault_truncate: Option<f64>,
    /// Share of attempts answered with nothing (no content, reasoning or tool calls).
    #[arg(long, value_name = "R")]
    fault_empty: Option<f64>,
    /// vLLM flavour: one space around every added token (vLLM's spaces_between_special_tokens).
    #[arg(long)]
    spaces_around_special_tokens: bool,
    /// Answer 401 to requests without an Authorization header.
    #[arg(long)]
    require_key: bool,
    /// Credit limit in dollars (/api/v1/key `limit`; 402 once spent).
    #[arg(long, value_name = "USD")]
    credit_limit: Option<f64>,
    /// Milliseconds before the first byte of every answer.
    #[arg(long, default_value_t = 1)]
    latency_ms: u64,
    /// Extra microseconds per completion token.
    #[arg(long, default_value_t = 0)]
    per_token_us: u64,
    /// Seconds a hang fault stalls.
    #[arg(long, default_value_t = 600)]
    hang_secs: u64,
    /// Retry-After seconds on 429/503.
    #[arg(long, default_value_t = 1)]
    retry_after: u64,
    /// Capacity like a real provider: at most N requests in flight, 429 + Retry-After beyond.
    #[arg(long, value_name = "N")]
    capacity_max_in_flight: Option<usize>,
    /// Capacity like a real provider: at most R requests admitted per second (bursts of one
    /// second's worth), 429 + Retry-After beyond.
    #[arg(long, value_name = "R")]
    capacity_rps: Option<f64>,
    /// With --capacity-rps: advertise the bucket on every answer, as OpenRouter does
    /// (`X-RateLimit-Limit`, `-Remaining`, `-Reset` in Unix milliseconds).
    #[arg(long, requires = "capacity_rps")]
    capacity_headers: bool,
    /// Answer every chat completion with a recorded response instead of writing one: a JSONL
    /// file of recorded exchanges (tests/data/server_shapes/*.jsonl: `request` plus the server's
    /// `response` or stream `chunks`), matched on messages, tools, chat_template_kwargs, stream,
    /// spaces_between_special_tokens and return_token_ids; 404 when nothing matches.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// With --replay: only the recordings of this server shape, e.g. vllm-0.33.0/stream/spaces
    /// (kind-version/stream|nonstream/spaces|nospaces[/token_ids]).
    #[arg(long, value_name = "NAME", requires = "replay")]
    replay_shape: Option<String>,
    /// Answer as a named provider (repeatable): its own flavour, conventions, tool-call defect
    /// rates and routing attributes, e.g. `Chutes:vllm:inreasoning=0.2,badjson=0.05` or
    /// `DeepInfra:openrouter:usage_excludes_end_token,ids=index,price=0.8`. Conventions:
    /// usage_excludes_end_token, generates_think, spaces_special_tokens,
    /// compacts_arguments[=ascii], ids=native|no_prefix|index|minted. Defects: undeclared,
    /// badjson, schema, badid, markers, inreasoning, finish, nocall (a bare name means rate 1).
    /// price=F (a multiple of the sim's prices), throughput=TPS, latency=MS: what
    /// `provider.sort` ranks by. `down`: every request to it fails (502). Requests are routed as
    /// OpenRouter routes them (`provider.only`, `order`, `ignore`, `sort`, `allow_fallbacks`;
    /// by default balanced by price); answers name the provider in `provider`. All are listed at
    /// `GET /api/v1/models/AUTHOR/SLUG/endpoints`, as OpenRouter lists them.
    #[arg(long = "provider", value_name = "NAME:FLAVOR[:ITEM,...]")]
    providers: Vec<String>,
    /// Serve any model id (by default an OpenRouter-like sim refuses ids other than its model's
    /// with OpenRouter's 400 "X is not a valid model ID").
    #[arg(long)]
    any_model: bool,
}

impl Args {
    fn config(&self) -> Result<SimConfig, UsageError> {
        let mut faults = match self.faults_all {
            Some(rate) => FaultRates::all(check_rate("--faults-all", rate)?),
            None => FaultRates::default(),
        };
        let each = [
            ("--fault-429", self.fault_429, FaultKind::RateLimited),
            ("--fault-5xx", self.fault_5xx, FaultKind::ServerError),
            ("--fault-hang", self.fault_hang, FaultKind::Hang),
            (
                "--fault-midstream",
                self.fault_midstream,
                FaultKind::MidStream,
            ),
            (
                "--fault-error200",
                self.fault_error200,
                FaultKind::ErrorIn200,
            ),
            (
                "--fault-malformed",
                self.fault_malformed,
                FaultKind::Malformed,
            ),
            (
                "--fault-truncate",
                self.fault_truncate,
                FaultKind::Truncated,
            ),
            ("--fault-empty", self.fault_empty, FaultKind::Empty),
        ];
        for (flag, rate, kind) in each {
            if let Some(rate) = rate {
                faults.set(kind, check_rate(flag, rate)?);
            }
        }
        let (model_dir, model_name) = match &self.model {
            Some(model) if PathBuf::from(model).is_dir() || assets::known_repo(model).is_some() => {
                let dir = assets::resolve_model(model).map_err(|e| UsageError(e.to_string()))?;
                (Some(dir), request_model_name(model))
            }
            Some(name) => (family_model_dir(name), name.clone()),
            None => (None, SimConfig::default().model_name),
        };
        let profile = self.model.as_deref().and_then(|model| {
            implied_profile(model).map(str::to_string).or_else(|| {
                model_dir
                    .as_ref()
                    .and(named_family(model))
                    .map(|f| f.name().to_string())
            })
        });
        Ok(SimConfig {
            flavor: self.flavor,
            seed: self.seed,
            model_dir,
            profile,
            model_name,
            faults,
            latency: Latency {
                base: Duration::from_millis(self.latency_ms),
                per_token: Duration::from_micros(self.per_token_us),
            },
            spaces_around_special_tokens: self.spaces_around_special_tokens,
            require_key: self.require_key,
            credit_limit: self.credit_limit,
            hang: Duration::from_secs(self.hang_secs),
            retry_after_secs: self.retry_after,
            capacity: self.capacity()?,
            replay: self.replay()?,
            providers: self
                .providers
                .iter()
                .map(|spec| spec.parse().map_err(UsageError))
                .collect::<Result<_, _>>()?,
            refuses_unknown_models: !self.any_model,
            ..SimConfig::default()
        })
    }

    fn replay(&self) -> Result<Option<Arc<Replay>>, UsageError> {
        let Some(path) = &self.replay else {
            return Ok(None);
        };
        let replay = Replay::load(path, self.replay_shape.as_deref())
            .map_err(|e| UsageError(e.to_string()))?;
        eprintln!(
            "draftgen sim: replaying {} recorded answer(s) from {} (shapes: {}){}",
            replay.len(),
            path.display(),
            replay.shapes().join(", "),
            match replay.repeated() {
                0 => String::new(),
                n => format!("; {n} recording(s) repeat an earlier request: such requests are answered in turn, in file order"),
            }
        );
        Ok(Some(Arc::new(replay)))
    }

    fn capacity(&self) -> Result<Option<CapacityConfig>, UsageError> {
        if self.capacity_max_in_flight == Some(0) {
            return Err(UsageError(
                "--capacity-max-in-flight must be at least 1".to_string(),
            ));
        }
        if self
            .capacity_rps
            .is_some_and(|r| !(r.is_finite() && r > 0.0))
        {
            return Err(UsageError(
                "--capacity-rps must be a positive number".to_string(),
            ));
        }
        if self.capacity_max_in_flight.is_none() && self.capacity_rps.is_none() {
            return Ok(None);
        }
        Ok(Some(CapacityConfig {
            max_in_flight: self.capacity_max_in_flight,
            rps: self.capacity_rps,
            retry_after_secs: self.retry_after,
            headers: self.capacity_headers,
        }))
    }
}

fn check_rate(flag: &str, rate: f64) -> Result<f64, UsageError> {
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(UsageError(format!(
            "{flag} {rate}: a fault rate is a share of attempts between 0 and 1"
        )))
    }
}

/// One named provider as the startup lines list it: its shape, conventions and price.
fn describe_provider(p: &NamedProvider) -> String {
    let conventions = p.conventions.names();
    format!(
        "provider {}: {}, conventions {}, price x{}{}",
        p.name,
        p.shape.describe(),
        if conventions.is_empty() {
            "none".to_string()
        } else {
            conventions.join(", ")
        },
        p.price,
        if p.down { ", down" } else { "" }
    )
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config()?;
    let (model_name, model_dir) = (config.model_name.clone(), config.model_dir.clone());
    let providers: Vec<String> = config.providers.iter().map(describe_provider).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let simulator = Simulator::new(config)?;
        let listener = crate::sim::server::listen(&args.host, args.port)
            .await
            .map_err(|e| {
                anyhow::anyhow!("sim: cannot listen on {}:{}: {e}", args.host, args.port)
            })?;
        let addr = listener.local_addr()?;
        println!("http://{addr}/v1");
        eprintln!(
            "draftgen sim: {} flavour, seed {}, model {} ({}); Ctrl-C to stop",
            args.flavor.name(),
            args.seed,
            model_name,
            match &model_dir {
                Some(dir) => format!("tokenizer and template from {}", dir.display()),
                None => "no tokenizer: counts are whitespace-separated pieces".to_string(),
            }
        );
        for line in &providers {
            eprintln!("  {line}");
        }
        simulator
            .serve(listener, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The family a model name names (its profile name, or a model id of it).
fn named_family(name: &str) -> Option<crate::model::family::Family> {
    use crate::model::family::Family;
    Family::from_name(name).or_else(|| Family::from_model_id(name))
}

/// A model directory for the family `name` names, made from its tokenizer files wherever they
/// are found (`sim/family_model.rs`) in draftgen's cache directory; `None` (counts are then
/// whitespace-separated pieces, as said on stderr) when the name is no family's or its files
/// are nowhere.
fn family_model_dir(name: &str) -> Option<PathBuf> {
    let family = named_family(name)?;
    let found = match crate::sim::family_model::find(family, name) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("draftgen sim: {e}; counting whitespace-separated pieces instead");
            return None;
        }
    };
    let cache = dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("draftgen")
        .join(format!("family-{}", family.name()));
    match found.directory(&cache) {
        Ok(dir) => Some(dir),
        Err(e) => {
            eprintln!("draftgen sim: {}: {e}", cache.display());
            None
        }
    }
}
