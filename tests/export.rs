//! `draftgen export` end to end on a small build directory written here with the build output
//! schema (`src/build/shards.rs`), then checked by code nobody here wrote:
//! `tests/py/check_export.py` recomputes the vocabulary maps from the Parquet file with each
//! trainer's own rule (copied from their sources), loads every file with its trainer's loader
//! (`numpy.load`, `torch.load` or a faithful copy of it, `datasets.load_from_disk`, SpecForge's
//! `prompt_builder`), and compares. Without python3 + pyarrow + numpy that part is skipped
//! locally and fails under CI (`CI` set), where `.ci/run` installs them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder, UInt32Builder, UInt8Builder};
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use common::run::{jsonl as lines_of, RunDir, BIN};
use common::servers::start_sim;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

pub const TARGET_VOCAB: usize = 1000;

/// A deterministic generator (xorshift), so the data needs no file.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Samples whose masked ids are skewed (a few frequent ids, a long tail up to 999, ties across
/// samples) and few enough that a 64-id draft vocabulary needs padding.
fn samples() -> Vec<(String, Vec<u32>, Vec<u8>)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    for s in 0..40 {
        let prompt_len = 3 + (rng.next() % 6) as usize;
        let completion_len = 1 + (rng.next() % 6) as usize;
        let mut ids = Vec::new();
        for _ in 0..prompt_len {
            ids.push((rng.next() % TARGET_VOCAB as u64) as u32);
        }
        for _ in 0..completion_len {
            let r = rng.next();
            let id = match r % 8 {
                0..=2 => 900 + (r >> 8) % 5, // frequent, above the draft sizes
                3..=5 => (r >> 8) % 6,       // frequent low ids
                _ => 10 + (r >> 8) % 980,    // the tail
            };
            ids.push(id as u32);
        }
        let mut mask = vec![0u8; prompt_len];
        mask.extend(std::iter::repeat_n(1u8, completion_len));
        out.push((format!("p{s:03}"), ids, mask));
    }
    // One sample with no supervised token (prompt only), as a cut answer can leave.
    out.push(("p-empty".into(), vec![1, 2, 3], vec![0, 0, 0]));
    out
}

/// Write `samples-00000.parquet` and `build.json` as `draftgen build` does.
fn write_build_dir(dir: &Path) {
    let rows = samples();
    let list_u32 = DataType::List(Arc::new(Field::new("item", DataType::UInt32, true)));
    let list_u8 = DataType::List(Arc::new(Field::new("item", DataType::UInt8, true)));
    let list_utf8 = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("input_ids", list_u32, false),
        Field::new("loss_mask", list_u8, false),
        Field::new("prompt_len", DataType::UInt32, false),
        Field::new("completion_len", DataType::UInt32, false),
        Field::new("source", DataType::Utf8, true),
        Field::new("provider", DataType::Utf8, true),
        Field::new("finish_reason", DataType::Utf8, true),
        Field::new("has_tool_calls", DataType::Boolean, false),
        Field::new("fidelity_class", DataType::Utf8, false),
        Field::new("fidelity_reasons", list_utf8, false),
        Field::new("turns", DataType::UInt32, false),
    ]));
    let mut ids = ListBuilder::new(UInt32Builder::new());
    let mut masks = ListBuilder::new(UInt8Builder::new());
    let mut reasons = ListBuilder::new(StringBuilder::new());
    for (_, i, m) in &rows {
        ids.values().append_slice(i);
        ids.append(true);
        masks.values().append_slice(m);
        masks.append(true);
        reasons.append(true);
    }
    let n = rows.len();
    let prompt_len: Vec<u32> = rows
        .iter()
        .map(|r| r.2.iter().filter(|&&m| m == 0).count() as u32)
        .collect();
    let completion_len: Vec<u32> = rows
        .iter()
        .map(|r| r.2.iter().filter(|&&m| m == 1).count() as u32)
        .collect();
    let text = |v: &str| Arc::new(StringArray::from(vec![Some(v); n])) as ArrayRef;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(
            rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        )),
        Arc::new(ids.finish()),
        Arc::new(masks.finish()),
        Arc::new(UInt32Array::from(prompt_len)),
        Arc::new(UInt32Array::from(completion_len)),
        text("test"),
        text("sim"),
        text("stop"),
        Arc::new(BooleanArray::from(vec![false; n])),
        text("exact_by_server_ids"),
        Arc::new(reasons.finish()),
        Arc::new(UInt32Array::from(vec![1u32; n])),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(16))
        .build();
    let file = std::fs::File::create(dir.join("samples-00000.parquet")).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let build = serde_json::json!({
        "draftgen_version": "test",
        "model": {"name": "test", "vocab_size": TARGET_VOCAB},
        "shards": [{"file": "samples-00000.parquet", "rows": n}],
    });
    std::fs::write(dir.join("build.json"), build.to_string()).unwrap();
}

fn draftgen(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "draftgen {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

struct Exported {
    _tmp: tempfile::TempDir,
    build: PathBuf,
    out: PathBuf,
}

fn export_all() -> Exported {
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("build");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&build).unwrap();
    write_build_dir(&build);
    export_all_of(&build, &out, None);
    Exported {
        _tmp: tmp,
        build,
        out,
    }
}

/// Every export of the build directory `build` into `out` (`export specforge --run RUN` too
/// when a run is given).
fn export_all_of(build: &Path, out: &Path, run: Option<&Path>) {
    let b = build.to_str().unwrap();
    for rule in ["specforge", "speculators"] {
        for n in ["8", "64"] {
            let dir = out.join(format!("vocab-{rule}-{n}"));
            draftgen(&[
                "export",
                "vocab",
                "--samples",
                b,
                "--draft-vocab-size",
                n,
                "--rule",
                rule,
                "--out",
                dir.to_str().unwrap(),
                "--coverage-sizes",
                "4,8,16,64,2000",
            ]);
        }
    }
    let specforge = out.join("specforge");
    let mut args = vec![
        "export",
        "specforge",
        "--samples",
        b,
        "--out",
        specforge.to_str().unwrap(),
    ];
    if let Some(run) = run {
        args.extend(["--run", run.to_str().unwrap()]);
    }
    draftgen(&args);
    draftgen(&[
        "export",
        "speculators",
        "--samples",
        b,
        "--out",
        out.join("speculators").to_str().unwrap(),
    ]);
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn vocab_report_and_files() {
    let e = export_all();
    let report = read_json(&e.out.join("vocab-specforge-64/vocab.json"));
    assert_eq!(report["draft_vocab_size"], 64);
    assert_eq!(report["target_vocab_size"], TARGET_VOCAB);
    assert!(
        report["padded_ids"].as_u64().unwrap() > 0,
        "the 64-id case must exercise padding"
    );
    let sizes: Vec<u64> = report["coverage_table"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["draft_vocab_size"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sizes,
        vec![4, 8, 16, 64],
        "sizes above the target vocabulary are left out"
    );
    let table = report["coverage_table"].as_array().unwrap();
    assert_eq!(
        table.last().unwrap()["coverage"].as_f64().unwrap(),
        report["coverage"].as_f64().unwrap()
    );
    for f in ["vocab_mapping.pt", "vocab.safetensors"] {
        assert!(e.out.join("vocab-specforge-8").join(f).is_file(), "{f}");
    }
    for f in ["d2t.npy", "t2d.npy", "vocab.safetensors"] {
        assert!(e.out.join("vocab-speculators-8").join(f).is_file(), "{f}");
    }
    // t2d.npy holds one byte per target id after its 128-byte header.
    let t2d = std::fs::read(e.out.join("vocab-speculators-64/t2d.npy")).unwrap();
    assert_eq!(t2d.len(), 128 + TARGET_VOCAB);
    assert_eq!(t2d[128..].iter().filter(|&&b| b == 1).count(), 64);
}

#[test]
fn trainer_files_have_every_row() {
    let e = export_all();
    let specforge = std::fs::read_to_string(e.out.join("specforge/specforge.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = specforge
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), samples().len());
    for (line, (id, ids, mask)) in lines.iter().zip(samples()) {
        assert_eq!(line["id"], id);
        assert_eq!(line["input_ids"], serde_json::json!(ids));
        assert_eq!(line["loss_mask"], serde_json::json!(mask));
    }
    let spec = e.out.join("speculators");
    assert_eq!(
        std::fs::read_to_string(spec.join("speculators.jsonl"))
            .unwrap()
            .lines()
            .count(),
        samples().len()
    );
    let state = read_json(&spec.join("prepared/state.json"));
    assert_eq!(
        state["_data_files"][0]["filename"],
        "data-00000-of-00001.arrow"
    );
    assert!(spec.join("prepared/token_freq.pt").is_file());
}

#[test]
fn a_directory_without_shards_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args([
            "export",
            "specforge",
            "--samples",
            tmp.path().to_str().unwrap(),
            "--out",
        ])
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("samples-*.parquet"));
}

/// Python with pyarrow + numpy (`DRAFTGEN_EXPORT_PYTHON`, else `python3`), or None (then the
/// check is skipped outside CI). Point it at an interpreter with torch to check with real
/// `torch.load`.
fn python() -> Option<String> {
    let py = std::env::var("DRAFTGEN_EXPORT_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import pyarrow, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI needs python3 with pyarrow and numpy (.ci/run installs them)"
    );
    None
}

#[test]
fn trainers_own_code_reads_the_exports() {
    let e = export_all();
    run_check_export(&e.build, &e.out, None);
}

/// `check_export.py BUILD OUT [RUN]` must pass (skipped without python3 + pyarrow + numpy).
fn run_check_export(build: &Path, out: &Path, run: Option<&Path>) {
    let Some(py) = python() else {
        eprintln!("skipped: python3 with pyarrow and numpy not found");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/check_export.py");
    let mut command = Command::new(&py);
    command.arg(script).arg(build).arg(out);
    if let Some(run) = run {
        command.arg(run);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check_export.py failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
}

/// A real run (the demo: bundled datasets with tools and multi-turn histories, generated
/// against the simulator with injected 429s / 5xx / mid-stream failures, so the journal holds
/// failed attempts before successes), built with `build`, then every export of it; the
/// conversations are checked against the journal and read by SpecForge's loaders in Python.
#[test]
fn every_export_of_a_real_build_and_its_conversations() {
    let dir = RunDir::new();
    let o = dir.demo().output().unwrap();
    assert!(
        o.status.success(),
        "demo: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = dir.path().join("run");
    let build = dir.path().join("build");
    let out = dir.path().join("out");
    draftgen(&[
        "build",
        "--model",
        "kimi-k2.5",
        "--run",
        run.to_str().unwrap(),
        "--out",
        build.to_str().unwrap(),
        "--prompts",
        dir.path().join("prompts.jsonl").to_str().unwrap(),
    ]);
    export_all_of(&build, &out, Some(&run));
    let samples = lines_of(&out.join("specforge/specforge.jsonl"));
    let conversations = lines_of(&out.join("specforge/conversations.jsonl"));
    assert!(samples.len() > 10, "the demo builds samples");
    assert_eq!(
        conversations.len(),
        samples.len(),
        "one conversation per sample"
    );
    for (c, s) in conversations.iter().zip(&samples) {
        assert_eq!(c["id"], s["id"], "build order");
        let last = c["conversations"].as_array().unwrap().last().unwrap();
        assert_eq!(last["role"], "assistant");
    }
    assert!(
        conversations.iter().any(|c| c["tools"].is_array()),
        "the demo's prompts include tool declarations"
    );
    run_check_export(&build, &out, Some(&run));
}

/// A 3-turn conversation regenerated with `generate --turns all` and a single-turn prompt: the
/// conversation row of the multi-turn sample is its last turn's request (which holds the
/// regenerated earlier turns) and that turn's answer.
#[test]
fn a_multi_turn_sample_exports_its_regenerated_conversation() {
    let assets = draftgen::model::assets::assets_root().expect("reference assets");
    let dir = RunDir::new();
    let conversation = serde_json::json!({"id": "conv1", "source": "t", "messages": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "Seven."},
        {"role": "user", "content": "And a larger one?"},
        {"role": "assistant", "content": "Thirteen."},
        {"role": "user", "content": "Now add them."},
        {"role": "assistant", "content": "Twenty."}
    ]});
    let single = serde_json::json!({"id": "single1", "source": "t", "messages": [
        {"role": "user", "content": "Say hello."}
    ]});
    dir.write_prompts([conversation, single]);
    let sim = start_sim(draftgen::sim::SimConfig {
        seed: 7,
        model_dir: Some(assets.join("kimi-k2.5")),
        ..draftgen::sim::SimConfig::default()
    });
    let run = dir.run();
    let o = dir
        .generate(&sim.base_url())
        .args(["--turns", "all", "--model", "m"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let build = dir.path().join("build");
    let out = dir.path().join("out");
    draftgen(&[
        "build",
        "--model",
        "kimi-k2.5",
        "--run",
        run.to_str().unwrap(),
        "--out",
        build.to_str().unwrap(),
    ]);
    export_all_of(&build, &out, Some(&run));
    let conversations = lines_of(&out.join("specforge/conversations.jsonl"));
    let by_id = |id: &str| {
        conversations
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no conversation {id}"))
            .clone()
    };
    let multi = by_id("conv1");
    let messages = multi["conversations"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // The history holds the regenerated answers, not the dataset's.
    let journal: Vec<serde_json::Value> = dir.journal();
    let answer_of = |id: &str| {
        journal
            .iter()
            .find(|r| r["id"] == id && r["status"] == "success")
            .unwrap()["response"]["choices"][0]["message"]["content"]
            .clone()
    };
    assert_eq!(messages[1]["content"], answer_of("conv1:turn1/3"));
    assert_eq!(messages[3]["content"], answer_of("conv1:turn2/3"));
    assert_eq!(messages[5]["content"], answer_of("conv1:turn3/3"));
    assert_ne!(messages[1]["content"], "Seven.");
    let single = by_id("single1");
    assert_eq!(single["conversations"].as_array().unwrap().len(), 2);
    run_check_export(&build, &out, Some(&run));
}

/// Every exported file gets the mode any file written by this process gets (0644 under the
/// usual umask 022): none is private to its owner.
#[test]
fn every_exported_file_has_the_ordinary_mode() {
    use std::os::unix::fs::PermissionsExt;
    let e = export_all();
    let reference = e.out.join("reference.txt");
    std::fs::write(&reference, "x").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let expected = mode(&reference);
    let mut pending = vec![e.out.clone()];
    let mut checked = 0;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                assert_eq!(mode(&path), expected, "{}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "{checked} files");
}

/// `draftgen ARGS` in `cwd`: (stdout, stderr), which must succeed.
fn draftgen_in(cwd: &Path, args: &[&str]) -> (String, String) {
    let output = Command::new(BIN)
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "draftgen {args:?}: {stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

/// Each export prints the trainer's next step with absolute paths, though it was given relative
/// ones: the keys SpecForge's config reads and the flags speculators' train.py takes.
#[test]
fn exports_print_the_trainers_next_step_with_absolute_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("build")).unwrap();
    write_build_dir(&root.join("build"));
    let vocab = |rule: &str| {
        let out = format!("v-{rule}");
        let args = [
            "export",
            "vocab",
            "--samples",
            "build",
            "--draft-vocab-size",
            "8",
            "--rule",
            rule,
            "--out",
            &out,
        ];
        draftgen_in(&root, &args).0
    };
    let specforge_vocab = vocab("specforge");
    let line = format!(
        "vocab_mapping_path: {}",
        root.join("v-specforge/vocab_mapping.pt").display()
    );
    assert!(specforge_vocab.contains(&line), "{specforge_vocab}");
    let speculators_vocab = vocab("speculators");
    for flag in [
        format!(
            "--d2t-path {}",
            root.join("v-speculators/d2t.npy").display()
        ),
        format!(
            "--t2d-path {}",
            root.join("v-speculators/t2d.npy").display()
        ),
        "--draft-vocab-size 8".to_string(),
    ] {
        assert!(speculators_vocab.contains(&flag), "{speculators_vocab}");
    }
    let (specforge, _) = draftgen_in(
        &root,
        &["export", "specforge", "--samples", "build", "--out", "sf"],
    );
    let line = format!(
        "prompts_path: {}",
        root.join("sf/specforge.jsonl").display()
    );
    assert!(specforge.contains(&line), "{specforge}");
    let (speculators, _) = draftgen_in(
        &root,
        &["export", "speculators", "--samples", "build", "--out", "sp"],
    );
    let flag = format!("--data-path {}", root.join("sp/prepared").display());
    assert!(speculators.contains(&flag), "{speculators}");
}

/// A draft vocabulary larger than the distinct trained ids is mostly padding: a warning, and
/// `vocab.json` says so.
#[test]
fn a_vocabulary_of_mostly_padding_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("build")).unwrap();
    write_build_dir(&root.join("build"));
    let distinct: std::collections::HashSet<u32> = samples()
        .into_iter()
        .flat_map(|(_, ids, mask)| {
            ids.into_iter()
                .zip(mask)
                .filter(|&(_, m)| m == 1)
                .map(|(id, _)| id)
        })
        .collect();
    let big = (distinct.len() * 3).to_string();
    let run = |size: &str| {
        let out = format!("v{size}");
        let (_, stderr) = draftgen_in(
            root,
            &[
                "export",
                "vocab",
                "--samples",
                "build",
                "--draft-vocab-size",
                size,
                "--rule",
                "speculators",
                "--out",
                &out,
            ],
        );
        (stderr, read_json(&root.join(out).join("vocab.json")))
    };
    let (stderr, report) = run(&big);
    assert!(stderr.contains("are padding"), "{stderr}");
    assert_eq!(report["mostly_padding"], true);
    let padded = report["padded_ids"].as_u64().unwrap() as f64;
    assert_eq!(
        report["padding_share"].as_f64().unwrap(),
        padded / (distinct.len() * 3) as f64
    );
    let (stderr, report) = run("8");
    assert!(!stderr.contains("padding"), "{stderr}");
    assert_eq!(report["mostly_padding"], false);
}
