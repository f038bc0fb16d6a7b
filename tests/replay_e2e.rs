//! End to end through `generate` and `build` against answers made by the servers' own serving
//! code: the simulator replays the recorded responses of `tests/data/server_shapes/*.jsonl`
//! (`sim --replay`: vLLM 0.33.0 with Kimi K2.5, Qwen3 and DeepSeek-V3, vLLM 0.11.2 and SGLang
//! 0.5.23 with Kimi K2.5), `draftgen generate --kind KIND --server-version VERSION
//! --spaces-around-special-tokens true|false [--stream] [--server-token-ids] --model FAMILY` runs the
//! fixtures' prompts against it, `draftgen build` builds the run, and every built sample's
//! completion ids are compared with the ids the model sampled (the fixture's `truth`, from the
//! reference encoder). The rules, per group of fixtures that one run can send:
//! - **every prompt is accounted for**: each one succeeds at its first attempt (these are real
//!   answers, the empty ones too: SGLang's `content: ""` after a cut inside the tool section is a
//!   success, not an `empty_answer` retry), and each one becomes a sample;
//! - **no sample is wrong while classed exact** (`unique` or `exact_by_server_ids`);
//! - each sample gets the ids, class and reasons `reconstruct` gives the fixture when told its
//!   server shape directly (as tests/server_shapes.rs does): the run must carry the shape to `build`
//!   whole, so the manifest must record kind + version + spaces and `build.json` must show that
//!   `build` read them from there (no shape flag is given to `build`);
//! - the prompt ids equal the reference renderer's, for every fixture (Kimi prompts with tools
//!   included: K2.5's own `apply_chat_template`, tools as Moonshot's TypeScript declaration).
//!
//! The counts per class and group are printed (BENCHMARKS.md, "The same answers through
//! `generate` and `build`").
//!
//! This proves what `tests/server_shapes.rs` (which calls `reconstruct` directly) cannot: that the
//! engine journals the answer as the server sent it, that the manifest records the server shape
//! the flags declare, and that `build` reads that shape from the run.
//!
//! Every fixture is sent: one run per server shape (kind, version, streaming, spaces, server ids)
//! and per run setting the shape cannot vary within a run (model, chat template,
//! `chat_template_kwargs`), one prompt per fixture; one simulator per run, replaying that group's
//! recordings only. The corpus samples many answers to one conversation, so several prompts carry
//! the same messages; they get distinct ids (labels only: `generate` runs each line) and the
//! replay answers a repeated request with its recordings in turn, as a sampling server gives a
//! new answer each time. Which recording answered which prompt is read back from the journal
//! (each recorded answer has its own `id`), so the order of the requests does not matter.
//!
//! Not run: answers streamed with `return_token_ids` (the corpus has 12, from vLLM): `generate`
//! refuses `--server-token-ids --stream` (it collects no ids from a stream; tests/run_shape.rs).
//! The test says how many it left out.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use draftgen::api::assemble::ChunkAssembler;
use draftgen::api::ServerKind;
use draftgen::dataset::canonical::canonical_json;
use draftgen::dataset::{Prompt, PromptOptions};
use draftgen::model::{LoadOptions, Profile};
use draftgen::reconstruct::{reconstruct, ExchangeRequest, ReconstructOptions};
use draftgen::sim::{self, Replay, SimConfig};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

/// Every run's `--max-tokens`: above every fixture's own. Each prompt carries the limit its
/// fixture's request was recorded with (`request_options.max_tokens`, 51 different values: each
/// cut was made by its own small limit), so the journaled request says what the server was asked
/// and `build` tells a cut at the limit from an answer that finished below it (a vLLM 0.11 cut
/// says `finish_reason: tool_calls`).
const MAX_TOKENS: u64 = 4096;

struct Fixture {
    line: String,
    name: String,
    family: String,
    profile: String,
    model: String,
    chat_template: Option<String>,
    stream: bool,
    spaces: bool,
    token_ids: bool,
    kind: String,
    version: String,
    messages: Vec<Value>,
    tools: Option<Vec<Value>>,
    kwargs: Option<Value>,
    /// The answer as a client sees it (the streamed chunks assembled).
    answer: Value,
    truth: Vec<u32>,
    /// The prompt's ids from the reference renderer (every fixture of the corpus has them).
    truth_prompt: Option<Vec<u32>>,
    cut: String,
    determined: bool,
    /// The recorded answer's own `id` (unique in the corpus).
    answer_id: String,
}

impl Fixture {
    fn read(line: &str) -> Fixture {
        let v: Value = serde_json::from_str(line).expect("fixture line");
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        let b = |p: &str| v.pointer(p).and_then(Value::as_bool).unwrap_or(false);
        let answer = match v.get("response") {
            Some(body) => body.clone(),
            None => {
                let mut assembler = ChunkAssembler::new();
                for chunk in v["chunks"].as_array().expect("`response` or `chunks`") {
                    assembler.push(chunk);
                }
                assembler.finish()
            }
        };
        Fixture {
            line: line.to_string(),
            name: s("/name").unwrap(),
            family: s("/family").unwrap(),
            profile: s("/profile").unwrap(),
            model: s("/model").unwrap(),
            chat_template: s("/chat_template"),
            stream: b("/server/stream"),
            spaces: b("/server/spaces_between_special_tokens"),
            token_ids: b("/server/return_token_ids"),
            kind: s("/server/kind").expect("the fixture names its server"),
            version: s("/server/version").expect("the fixture names its server's version"),
            messages: v["request"]["messages"].as_array().unwrap().clone(),
            tools: v["request"]["tools"]
                .as_array()
                .filter(|t| !t.is_empty())
                .cloned(),
            kwargs: v["request"].get("chat_template_kwargs").cloned(),
            answer,
            truth: serde_json::from_value(v["truth"]["completion_ids"].clone()).unwrap(),
            truth_prompt: serde_json::from_value(v["truth"]["prompt_ids"].clone()).unwrap(),
            cut: s("/expect/cut").unwrap_or_else(|| "none".to_string()),
            determined: b("/expect/determined"),
            answer_id: s("/response/id")
                .or_else(|| s("/chunks/0/id"))
                .expect("a recorded answer has an id"),
        }
    }

    /// The server shape: what `generate` is told with `--kind`, `--server-version`,
    /// `--spaces-around-special-tokens`, `--stream` and `--server-token-ids`.
    fn shape(&self) -> String {
        format!(
            "{} {}-{}/{}/{}{}",
            self.family,
            self.kind,
            self.version,
            if self.stream { "stream" } else { "nonstream" },
            if self.spaces { "spaces" } else { "nospaces" },
            if self.token_ids { "/token_ids" } else { "" }
        )
    }

    fn server_kind(&self) -> ServerKind {
        serde_json::from_value(json!(self.kind)).expect("a server kind draftgen knows")
    }

    /// What else one run fixes for all its prompts: the model, template and kwargs.
    fn run_settings(&self) -> (String, Option<String>, String) {
        (
            self.model.clone(),
            self.template_file().map(|t| t.display().to_string()),
            self.kwargs.as_ref().map(canonical_json).unwrap_or_default(),
        )
    }

    /// The `--chat-template` for `build`: the corpus's Kimi template is draftgen's built-in
    /// stand-in when the file is not there (as in tests/server_shapes.rs).
    fn template_file(&self) -> Option<PathBuf> {
        let name = self.chat_template.as_deref()?;
        let path = common::assets().join(name);
        (path.exists() || !name.ends_with("kimi-k2.5-style.jinja")).then_some(path)
    }

    fn prompt(&self) -> Prompt {
        Prompt::new(
            "server_shapes",
            self.messages.clone(),
            self.tools.clone(),
            Value::Null,
        )
    }

    /// No content and no tool calls (reasoning aside): SGLang's `content: ""` after a cut
    /// inside the tool section, vLLM's `null`. A real answer all the same, never to be retried as
    /// an `empty_answer`.
    fn shows_no_content(&self) -> bool {
        let message = &self.answer["choices"][0]["message"];
        message["content"].as_str().is_none_or(str::is_empty)
            && message["tool_calls"]
                .as_array()
                .is_none_or(|calls| calls.is_empty())
    }
}

fn fixtures() -> Vec<Fixture> {
    common::server_shape_files()
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(Fixture::read)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// One `generate` + `build`: the fixtures of one server shape and one run's settings, each with
/// its prompt id.
struct Group<'a> {
    shape: String,
    fixtures: Vec<(String, &'a Fixture)>,
}

/// What one group's run produced.
struct Ran {
    /// The built samples, each with the name of the recording that answered it.
    samples: Vec<(String, Value)>,
    /// `generate`'s `summary.json`.
    summary: Value,
    /// `manifest.json`'s `servers`.
    servers: Value,
    /// `build.json`'s `run_settings`: the shape `build` read from the run.
    build_settings: Value,
    /// `reconstruct` on each fixture told its shape directly, in the group's order.
    direct: Vec<Judged>,
}

#[derive(Default)]
struct Tally {
    samples: usize,
    right: usize,
    /// Classed exact and right.
    exact: usize,
    /// Wrong but with a non-exact class.
    wrong_flagged: usize,
    /// Wrong and classed exact: silently wrong (must stay 0).
    wrong_silent: usize,
    /// Determined by the answer but not rebuilt exactly (flagged).
    missed: usize,
    /// Samples whose prompt ids were compared with the reference renderer's.
    prompts_checked: usize,
    /// Answers without content or calls ([`Fixture::shows_no_content`]), each a success and a sample.
    no_content: usize,
    by_class: BTreeMap<String, usize>,
    cuts: BTreeSet<String>,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One run: replay, `generate`, `build`; then `reconstruct` on each fixture directly.
fn run_one(
    group: &Group<'_>,
    dir: &Path,
    rt: &tokio::runtime::Runtime,
    profiles: &Profiles,
) -> Result<Ran, String> {
    let first = group.fixtures[0].1;
    let replay_text: String = group
        .fixtures
        .iter()
        .map(|(_, f)| format!("{}\n", f.line))
        .collect();
    let replay = Replay::parse(&replay_text, "replay", None).map_err(|e| e.to_string())?;
    let sim = rt
        .block_on(sim::spawn(SimConfig {
            replay: Some(Arc::new(replay)),
            ..SimConfig::default()
        }))
        .map_err(|e| e.to_string())?;
    let prompts = dir.join("prompts.jsonl");
    let lines: String = group
        .fixtures
        .iter()
        .map(|(id, f)| {
            let mut prompt = f.prompt();
            prompt.id = id.clone();
            let v: Value = serde_json::from_str(&f.line).unwrap();
            if let Some(limit) = v["request"]["max_tokens"].as_u64() {
                assert!(limit <= MAX_TOKENS, "{}: max_tokens {limit}", f.name);
                prompt.request_options = Some(Box::new(PromptOptions {
                    max_tokens: Some(limit as u32),
                    ..PromptOptions::default()
                }));
            }
            format!("{}\n", serde_json::to_string(&prompt).unwrap())
        })
        .collect();
    std::fs::write(&prompts, lines).unwrap();
    let run_dir = dir.join("run");
    let mut generate = Command::new(BIN);
    generate
        .args(["generate", "--progress", "none", "--kind", &first.kind])
        .args(["--server-version", &first.version])
        .args([
            "--spaces-around-special-tokens",
            if first.spaces { "true" } else { "false" },
        ])
        .args(["--model", &first.model])
        .args(["--max-tokens", &MAX_TOKENS.to_string()])
        .args(["--concurrency", "8"])
        .arg("--prompts")
        .arg(&prompts)
        .arg("--run")
        .arg(&run_dir)
        .args(["--base-url", &sim.base_url()])
        .env_remove("DRAFTGEN_BASE_URL")
        .env_remove("DRAFTGEN_MODEL")
        .env_remove("OPENROUTER_API_KEY");
    if first.stream {
        generate.arg("--stream");
    }
    if first.token_ids {
        generate.arg("--server-token-ids");
    }
    if let Some(kwargs) = &first.kwargs {
        let config = dir.join("run.toml");
        let pairs: Vec<String> = kwargs
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        std::fs::write(
            &config,
            format!(
                "[request]\nchat_template_kwargs = {{ {} }}\n",
                pairs.join(", ")
            ),
        )
        .unwrap();
        generate.arg("--config").arg(&config);
    }
    let out = generate.output().unwrap();
    rt.block_on(sim.shutdown()).map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "generate failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let assets = common::assets();
    let built = dir.join("built");
    // No shape flag: `build` must read the shape from the run's manifest.
    let mut build = Command::new(BIN);
    build
        .args(["build", "--jsonl", "--drop-class", "none"])
        .arg("--model")
        .arg(assets.join(&first.model))
        .args(["--profile", &first.profile])
        .arg("--run")
        .arg(&run_dir)
        .arg("--out")
        .arg(&built);
    if let Some(template) = first.template_file() {
        build.arg("--chat-template").arg(template);
    }
    let out = build.output().unwrap();
    if !out.status.success() {
        return Err(format!(
            "build failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // prompt id → the answer's own id, from the journal.
    let mut answer_of: HashMap<String, String> = HashMap::new();
    for segment in std::fs::read_dir(run_dir.join("journal")).unwrap() {
        let text = std::fs::read_to_string(segment.unwrap().path()).unwrap();
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if let Some(answer) = record["response"]["id"].as_str() {
                answer_of.insert(
                    record["id"].as_str().unwrap().to_string(),
                    answer.to_string(),
                );
            }
        }
    }
    let recording_of: HashMap<&str, &str> = group
        .fixtures
        .iter()
        .map(|(_, f)| (f.answer_id.as_str(), f.name.as_str()))
        .collect();
    let text = std::fs::read_to_string(built.join("samples.jsonl")).unwrap();
    let samples = text
        .lines()
        .map(|l| {
            let sample: Value = serde_json::from_str(l).unwrap();
            let id = sample["id"].as_str().unwrap_or_default();
            let name = answer_of
                .get(id)
                .and_then(|a| recording_of.get(a.as_str()))
                .ok_or_else(|| format!("sample {id}: no journaled answer from a recording"))?;
            Ok((name.to_string(), sample))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Ran {
        samples,
        summary: read_json(&run_dir.join("summary.json"))?,
        servers: read_json(&run_dir.join("manifest.json"))?["servers"].clone(),
        build_settings: read_json(&built.join("build.json"))?["run_settings"].clone(),
        direct: group
            .fixtures
            .iter()
            .map(|(_, f)| direct(f, profiles))
            .collect(),
    })
}

type Profiles = HashMap<(String, Option<PathBuf>), Profile>;

/// Every profile (and template) the fixtures need, loaded once.
fn profiles(fixtures: &[Fixture]) -> Profiles {
    let mut profiles = Profiles::new();
    for f in fixtures {
        profiles
            .entry((f.profile.clone(), f.template_file()))
            .or_insert_with(|| {
                let options = LoadOptions {
                    profile: Some(f.profile.clone()),
                    chat_template: f.template_file(),
                };
                Profile::load(&common::assets().join(&f.model), &options).expect("profile")
            });
    }
    profiles
}

/// `reconstruct` on the fixture itself, told its server shape (kind, version, spaces, stream) as
/// tests/server_shapes.rs does: what `build` must agree with once the run has recorded the shape.
fn direct(f: &Fixture, profiles: &Profiles) -> Judged {
    let v: Value = serde_json::from_str(&f.line).unwrap();
    let profile = &profiles[&(f.profile.clone(), f.template_file())];
    let request: ExchangeRequest = serde_json::from_value(v["request"].clone()).unwrap();
    let options = ReconstructOptions {
        spaces_around_special_tokens: f.spaces,
        kind: f.server_kind(),
        server_version: Some(f.version.clone()),
        stream: Some(f.stream),
        ..ReconstructOptions::default()
    };
    let r = reconstruct(profile, &request, &f.answer, &options).expect("reconstruct");
    Judged {
        ids: r.completion_ids,
        class: serde_json::to_value(r.fidelity.class).unwrap(),
        reasons: serde_json::to_value(&r.fidelity.reasons).unwrap(),
    }
}

/// A sample's completion ids and fidelity (class and reasons).
#[derive(Debug, PartialEq)]
struct Judged {
    ids: Vec<u32>,
    class: Value,
    reasons: Value,
}

/// Check one group's run against its fixtures: into `tally`, problems into `failures`/`silent`.
fn check(
    group: &Group<'_>,
    ran: &Ran,
    tally: &mut Tally,
    failures: &mut Vec<String>,
    silent: &mut Vec<String>,
) {
    let shape = &group.shape;
    let first = group.fixtures[0].1;
    let prompts = group.fixtures.len() as u64;
    // Every prompt accounted for, each at its first attempt: a real answer (an empty one
    // included) is never retried, and no recording was skipped over by a retry.
    let count = |key: &str| ran.summary[key].as_u64().unwrap_or(u64::MAX);
    let (total, succeeded, failed) = (count("total"), count("succeeded"), count("failed"));
    if (total, succeeded + failed, succeeded, count("attempts"))
        != (prompts, prompts, prompts, prompts)
    {
        failures.push(format!(
            "{shape}: {prompts} prompts, but generate's summary says total {total}, succeeded \
             {succeeded}, failed {failed}, attempts {} (failed by class {})",
            count("attempts"),
            ran.summary["failed_by_error_class"]
        ));
    }
    // The manifest records the shape the flags declare, and `build` read it from there.
    let declared = json!({
        "kind": first.kind,
        "version": first.version,
        "spaces_around_special_tokens": first.spaces,
    });
    let recorded = &ran.servers[0];
    let recorded = json!({
        "kind": recorded["kind"],
        "version": recorded["version"],
        "spaces_around_special_tokens": recorded["spaces_around_special_tokens"],
    });
    if recorded != declared || ran.servers.as_array().map(Vec::len) != Some(1) {
        failures.push(format!(
            "{shape}: manifest servers {} do not record {declared}",
            ran.servers
        ));
    }
    let read = &ran.build_settings;
    let read = json!({
        "kind": read["server_kind"],
        "version": read["server_version"],
        "spaces_around_special_tokens": read["spaces_around_special_tokens"],
    });
    if read != declared {
        failures.push(format!(
            "{shape}: build read {} from the run, not {declared}",
            ran.build_settings
        ));
    }
    let by_name: HashMap<&str, &Value> = ran.samples.iter().map(|(n, s)| (n.as_str(), s)).collect();
    if ran.samples.len() != group.fixtures.len() {
        failures.push(format!(
            "{shape}: {} samples built from {prompts} prompts",
            ran.samples.len()
        ));
    }
    for ((_, f), direct) in group.fixtures.iter().zip(&ran.direct) {
        let Some(sample) = by_name.get(f.name.as_str()) else {
            failures.push(format!("{}: no sample built", f.name));
            continue;
        };
        let prompt_len = sample["prompt_len"].as_u64().unwrap() as usize;
        let ids: Vec<u32> = serde_json::from_value(sample["input_ids"].clone()).unwrap();
        let completion = ids.get(prompt_len..).unwrap_or_default();
        // The prompt too: `build` renders the journaled request as the reference renderer did.
        match &f.truth_prompt {
            Some(truth_prompt) => {
                tally.prompts_checked += 1;
                if ids.get(..prompt_len) != Some(truth_prompt.as_slice()) {
                    failures.push(format!(
                        "{}: the built prompt ids differ from the reference renderer's",
                        f.name
                    ));
                }
            }
            None => failures.push(format!("{}: the fixture has no truth.prompt_ids", f.name)),
        }
        let class = sample["fidelity_class"].as_str().unwrap().to_string();
        let exact_class = class == "unique" || class == "exact_by_server_ids";
        let right = completion == f.truth.as_slice();
        tally.samples += 1;
        tally.cuts.insert(f.cut.clone());
        *tally.by_class.entry(class.clone()).or_default() += 1;
        tally.right += usize::from(right);
        tally.exact += usize::from(right && exact_class);
        tally.wrong_flagged += usize::from(!right && !exact_class);
        tally.wrong_silent += usize::from(!right && exact_class);
        tally.missed += usize::from(f.determined && !(right && exact_class));
        tally.no_content += usize::from(f.shows_no_content());
        // The pipeline must judge as `reconstruct` does when told the shape directly.
        let built = Judged {
            ids: completion.to_vec(),
            class: sample["fidelity_class"].clone(),
            reasons: sample["fidelity_reasons"].clone(),
        };
        if &built != direct {
            failures.push(format!(
                "{}: generate + build gave class {} reasons {}, reconstruct with the fixture's own \
                 server shape gave {} {}{}",
                f.name,
                built.class,
                built.reasons,
                direct.class,
                direct.reasons,
                if direct.ids == built.ids { "" } else { " and other ids" }
            ));
        }
        if !right && exact_class {
            silent.push(format!(
                "{}: classed {class} but ids differ from the model's (reasons {})",
                f.name, sample["fidelity_reasons"]
            ));
        }
    }
}

#[test]
fn generate_and_build_on_the_servers_own_answers() {
    let fixtures = fixtures();
    // The corpus is committed: none read means the test would check nothing.
    assert!(
        !fixtures.is_empty(),
        "no fixtures read from tests/data/server_shapes/"
    );
    if fixtures.is_empty() {
        eprintln!("NOTE: tests/data/server_shapes/ holds no fixtures; nothing to replay");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    type RunKey = (String, (String, Option<String>, String));
    let mut grouped: BTreeMap<RunKey, Vec<(String, &Fixture)>> = BTreeMap::new();
    let mut not_sent = 0;
    for (i, f) in fixtures.iter().enumerate() {
        // `generate` collects no ids from a stream and refuses that combination.
        if f.stream && f.token_ids {
            not_sent += 1;
            continue;
        }
        grouped
            .entry((f.shape(), f.run_settings()))
            .or_default()
            .push((format!("{i:032x}"), f));
    }
    let mut groups: Vec<Group<'_>> = grouped
        .into_iter()
        .map(|((shape, _), fixtures)| Group { shape, fixtures })
        .collect();
    // Largest first, so the two workers finish together.
    groups.sort_by_key(|g| std::cmp::Reverse(g.fixtures.len()));
    let profiles = profiles(&fixtures);
    let tmp = tempfile::tempdir().unwrap();
    // Two at a time (the machine's cores): each run's `build` and the direct reconstructions are
    // CPU work, `generate` mostly waits.
    let next = AtomicUsize::new(0);
    let results: Vec<(usize, Result<Ran, String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(group) = groups.get(i) else { break };
                        let dir = tmp.path().join(format!("run-{i}"));
                        std::fs::create_dir_all(&dir).unwrap();
                        done.push((i, run_one(group, &dir, &rt, &profiles)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut table: BTreeMap<String, Tally> = BTreeMap::new();
    let mut silent = Vec::new();
    let mut failures = Vec::new();
    for (i, result) in results {
        let group = &groups[i];
        let tally = table.entry(group.shape.clone()).or_default();
        match result {
            Ok(ran) => check(group, &ran, tally, &mut failures, &mut silent),
            Err(e) => failures.push(format!(
                "{} ({}...): {e}",
                group.shape, group.fixtures[0].1.name
            )),
        }
    }
    eprintln!(
        "replay through generate + build: {} runs, {} fixtures ({not_sent} streamed with server \
         ids not sent), {} prompts compared with the reference renderer's ids",
        groups.len(),
        groups.iter().map(|g| g.fixtures.len()).sum::<usize>(),
        table.values().map(|t| t.prompts_checked).sum::<usize>()
    );
    eprintln!(
        "{:<45} {:>7} {:>5} {:>7} {:>13} {:>12} {:>5} {:>6} {:>10}  classes; cuts covered",
        "shape",
        "samples",
        "exact",
        "flagged",
        "wrong flagged",
        "wrong silent",
        "right",
        "missed",
        "no content"
    );
    for (shape, t) in &table {
        eprintln!(
            "{shape:<45} {:>7} {:>5} {:>7} {:>13} {:>12} {:>5} {:>6} {:>10}  {:?}; {:?}",
            t.samples,
            t.exact,
            t.samples - t.exact,
            t.wrong_flagged,
            t.wrong_silent,
            t.right,
            t.missed,
            t.no_content,
            t.by_class,
            t.cuts
        );
    }
    assert!(
        silent.is_empty(),
        "{} sample(s) silently wrong:\n{}",
        silent.len(),
        silent.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `draftgen sim --replay FILE --replay-shape NAME` as a user runs it: the recorded answer for a
/// recorded request, a 404 that says what was compared for anything else.
#[test]
fn sim_replay_cli_answers_recorded_requests_and_refuses_others() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/server_shapes/qwen3.jsonl");
    if !file.exists() {
        return;
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let fixture: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["server"]["stream"] == json!(false))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["sim", "--port", "0", "--replay"])
        .arg(&file)
        .args(["--replay-shape", "vllm-0.33.0/nonstream/spaces"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut url).unwrap();
    let url = url.trim().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let endpoint = format!("{url}/chat/completions");
    let post = |body: Value| rt.block_on(post_json(&endpoint, body));
    let (status, answer) = post(fixture["request"].clone());
    let mut other = fixture["request"].clone();
    other["messages"] = json!([{"role": "user", "content": "never recorded"}]);
    let (missing_status, missing) = post(other);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, fixture["response"]);
    assert_eq!(missing_status, 404, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no recorded answer for this request"),
        "{missing}"
    );
}

/// A plain HTTP/1.1 POST over a socket (`connection: close`, so the body ends at EOF).
async fn post_json(url: &str, body: Value) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /{path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status: u16 = text[9..12].parse().unwrap();
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}
