//! The run directory end to end: manifest checks, torn tails, corrupt lines, resume index,
//! segment rolling, secrets, summary, and kill -9 of a writing process.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::Duration;

use draftgen::api::ErrorClass;
use draftgen::journal::{
    segment_file_name, Disposition, JournalError, JournalOptions, JournalWriter, Manifest, Record,
    RunDir, Status, Summary, JOURNAL_DIR, REDACTED,
};
use serde_json::json;

/// Spawning a process copies every open descriptor into the child until it execs, a run's lock
/// file included; `flock` belongs to the open file (src/journal/lock.rs), so a lock another test
/// thread has just released stays held by that copy, and reopening its run is refused for as
/// long as the exec takes (long on a loaded machine). The tests that open runs hold this shared;
/// `kill_9_loses_and_duplicates_nothing` holds it exclusively while it spawns.
static SPAWNING: RwLock<()> = RwLock::new(());

/// For a test that opens runs: no process is being spawned in this test binary meanwhile.
fn no_spawn() -> RwLockReadGuard<'static, ()> {
    SPAWNING.read().unwrap_or_else(|e| e.into_inner())
}

fn manifest() -> Manifest {
    Manifest::new(
        "moonshotai/kimi-k2.5",
        vec!["https://openrouter.ai/api/v1".into()],
        json!({"temperature": 1.0, "max_tokens": 8192}),
        json!({"reasoning": {"effort": "high"}, "stream": true, "tools_mode": "parameter"}),
        "sha256:0f1e2d",
    )
}

/// A realistic record: request with messages, response with reasoning, content and usage.
fn record(id: &str, attempt: u32, status: Status, class: Option<ErrorClass>) -> Record {
    Record {
        id: id.to_string(),
        attempt,
        status,
        error_class: class,
        error: class.map(|c| format!("{c:?} from upstream")),
        endpoint: "openrouter".into(),
        request: json!({
            "model": "moonshotai/kimi-k2.5",
            "messages": [{"role": "user", "content": format!("Question {id}: what is 2+2? «ünïcödé» \"quoted\"\nnewline")}],
            "temperature": 1.0,
        }),
        response: (status == Status::Success).then(|| {
            json!({
                "id": "gen-1",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "reasoning": "Two plus two is four.", "content": "Four."}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 9, "cost": 0.0001},
            })
        }),
        http_status: Some(if status == Status::Success { 200 } else { 503 }),
        provider: Some("Moonshot AI".into()),
        cost_usd: (status == Status::Success).then_some(0.0001),
        prompt_tokens: (status == Status::Success).then_some(12),
        completion_tokens: (status == Status::Success).then_some(9),
        started_at: "2025-01-01T00:00:00Z".into(),
        latency_ms: 1234,
        first_byte_ms: Some(100),
        not_before_ms: None,
        source: Some("gsm8k".into()),
        origin: Default::default(),
        usage_flag: None,
    }
}

fn success(id: &str) -> Record {
    record(id, 1, Status::Success, None)
}

fn segment_path(run: &Path, n: u32) -> PathBuf {
    run.join(JOURNAL_DIR).join(segment_file_name(n))
}

/// Every line of every segment, asserting each is a complete, valid record.
fn all_records(run: &Path) -> Vec<Record> {
    RunDir::new(run)
        .records()
        .unwrap()
        .map(|item| {
            let (location, record) = item.unwrap();
            record.unwrap_or_else(|e| panic!("{location}: {}", e.reason))
        })
        .collect()
}

fn write_records(run: &Path, records: &[Record]) {
    let (mut journal, _) = RunDir::create_or_open(run, &manifest(), false).unwrap();
    for r in records {
        journal.append(r).unwrap();
    }
    journal.close().unwrap();
}

#[test]
fn new_run_writes_manifest_and_resume_sees_every_record() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let (mut journal, state) = RunDir::create_or_open(&run, &manifest(), false).unwrap();
    assert_eq!(state.prompt_count(), 0);
    assert!(run.join("manifest.json").is_file());
    let written: Manifest =
        serde_json::from_slice(&fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(written.fingerprint, manifest().fingerprint);

    let records = [
        record("a", 1, Status::Failed, Some(ErrorClass::RateLimited)),
        record("a", 2, Status::Success, None),
        record("b", 1, Status::Failed, Some(ErrorClass::Timeout)),
        record("c", 1, Status::Failed, Some(ErrorClass::BadRequest)),
        record("d", 1, Status::Skipped, None),
        record("e", 1, Status::Failed, Some(ErrorClass::ServerError)),
        record("e", 2, Status::Failed, Some(ErrorClass::Forbidden)),
    ];
    for r in &records {
        journal.append(r).unwrap();
    }
    assert_eq!(journal.close().unwrap().appended, 7);

    let (_journal, state) = RunDir::create_or_open(&run, &manifest(), false).unwrap();
    assert_eq!(state.prompt_count(), 5);
    assert_eq!(state.loaded_records, 7);
    assert!(state.report.torn_tail.is_none());
    assert!(state.report.corrupt_lines.is_empty());
    let disposition = |id| state.get(id).unwrap().disposition();
    assert_eq!(disposition("a"), Disposition::Succeeded);
    assert_eq!(disposition("b"), Disposition::Retry(ErrorClass::Timeout));
    assert_eq!(
        disposition("c"),
        Disposition::FailedPermanently(Some(ErrorClass::BadRequest))
    );
    assert_eq!(disposition("d"), Disposition::Skipped);
    assert_eq!(
        disposition("e"),
        Disposition::FailedPermanently(Some(ErrorClass::Forbidden))
    );
    assert!(state.is_finished("a") && !state.is_finished("b") && !state.is_finished("zz"));
    assert_eq!(state.attempts("a"), 2);
    assert_eq!(state.next_attempt("a"), 3);
    assert_eq!(state.next_attempt("new"), 1);
    assert_eq!(state.to_retry().collect::<Vec<_>>(), vec!["b"]);
    assert_eq!(state.totals.prompt_tokens, 12);
    assert_eq!(state.totals.completion_tokens, 9);
    assert!((state.totals.cost_usd - 0.0001).abs() < 1e-12);
    assert_eq!(state.totals.by_error_class[&ErrorClass::Timeout], 1);
    assert_eq!(all_records(&run), records.to_vec());
}

/// The usage counts are small fields at the front of each line (the resume scan reads only
/// the prefix); journals written before that have them only inside the response, and a journal
/// holding both kinds of line still resumes with the right totals.
#[test]
fn usage_counts_resume_from_the_front_and_from_old_journals() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let new = success("new");
    // As written before the counts were copied: only `response.usage` has them.
    let old = Record {
        id: "old".into(),
        prompt_tokens: None,
        completion_tokens: None,
        response: Some(json!({"choices": [{"message": {"content": "x"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7}})),
        ..success("old")
    };
    // A response whose usage is not its last member (the old search declines it).
    let usage_first = Record {
        id: "usage-first".into(),
        prompt_tokens: Some(100),
        completion_tokens: Some(200),
        response: Some(
            json!({"usage": {"prompt_tokens": 100, "completion_tokens": 200},
            "choices": [{"message": {"content": "y"}}]}),
        ),
        ..success("usage-first")
    };
    write_records(&run, &[new.clone(), old.clone(), usage_first.clone()]);
    let mut segment = fs::read(segment_path(&run, 1)).unwrap();

    // An old journal's line in the older field order (`request` third), written by hand.
    segment.extend_from_slice(
        br#"{"id":"older","attempt":1,"request":{"messages":[]},"status":"success","endpoint":"e","response":{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":2000}},"started_at":"t","latency_ms":1}"#,
    );
    segment.push(b'\n');
    fs::write(segment_path(&run, 1), &segment).unwrap();

    let text = String::from_utf8(segment).unwrap();
    let first = text.lines().next().unwrap();
    let prefix = &first[..first.find(r#","request":"#).unwrap()];
    assert!(
        prefix.contains(r#""prompt_tokens":12,"completion_tokens":9"#),
        "the counts are among the small fields: {prefix}"
    );
    let old_line = text.lines().nth(1).unwrap();
    assert!(!old_line[..old_line.find(r#","request":"#).unwrap()].contains("prompt_tokens"));

    let (_journal, state) = RunDir::create_or_open(&run, &manifest(), false).unwrap();
    assert!(state.report.corrupt_lines.is_empty());
    assert_eq!(state.loaded_records, 4);
    assert_eq!(state.totals.prompt_tokens, 12 + 5 + 100 + 1000);
    assert_eq!(state.totals.completion_tokens, 9 + 7 + 200 + 2000);
    for id in ["new", "old", "usage-first", "older"] {
        assert!(state.is_finished(id), "{id}");
    }
    // The full reader (build, verify) reads the new fields back, and old lines without them.
    let records = all_records(&run);
    assert_eq!(records[..3], [new, old, usage_first]);
    assert_eq!(records[3].prompt_tokens, None);
}

/// Each way a write can be torn; after open, the tail is gone, reported, and appends are clean.
#[test]
fn torn_last_line_is_truncated_and_the_journal_stays_appendable() {
    let _no_spawn = no_spawn();
    let full_line = serde_json::to_string(&success("torn")).unwrap();
    let tails: Vec<(&str, Vec<u8>)> = vec![
        (
            "half a line",
            full_line.as_bytes()[..full_line.len() / 2].to_vec(),
        ),
        (
            "a complete line without newline",
            full_line.as_bytes().to_vec(),
        ),
        ("garbage bytes", vec![0xff, 0x00, 0x13, b'{', 0xc3]),
        ("garbage line with newline", b"\x00\x00\x00{\"id\n".to_vec()),
        (
            "garbage line then a partial line",
            b"{not json}\n{\"id\":\"x\",\"sta".to_vec(),
        ),
        ("only a newline", b"\n".to_vec()),
    ];
    for (what, tail) in tails {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        write_records(run, &[success("a"), success("b")]);
        let segment = segment_path(run, 1);
        let clean_len = fs::metadata(&segment).unwrap().len();
        fs::OpenOptions::new()
            .append(true)
            .open(&segment)
            .unwrap()
            .write_all(&tail)
            .unwrap();

        // Read-only indexing reports but does not modify.
        let read_only = RunDir::new(run).read_state().unwrap();
        assert!(read_only.report.torn_tail.is_some(), "{what}");
        assert_eq!(
            fs::metadata(&segment).unwrap().len(),
            clean_len + tail.len() as u64
        );

        let (mut journal, state) = RunDir::create_or_open(run, &manifest(), false).unwrap();
        let torn = state
            .report
            .torn_tail
            .as_ref()
            .unwrap_or_else(|| panic!("{what}"));
        assert_eq!(torn.kept_bytes, clean_len, "{what}");
        assert_eq!(torn.removed_bytes, tail.len() as u64, "{what}");
        assert!(state.report.corrupt_lines.is_empty(), "{what}");
        assert_eq!(state.prompt_count(), 2, "{what}");
        assert!(!state.is_finished("torn"), "{what}");
        assert_eq!(fs::metadata(&segment).unwrap().len(), clean_len, "{what}");

        journal.append(&success("c")).unwrap();
        journal.close().unwrap();
        let ids: Vec<String> = all_records(run).into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "b", "c"], "{what}");
        let (_, state) = RunDir::create_or_open(run, &manifest(), false).unwrap();
        assert!(state.report.torn_tail.is_none(), "{what}");
    }
}

#[test]
fn corrupt_middle_line_is_reported_with_its_location_and_skipped() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    write_records(run, &[success("a")]);
    let segment = segment_path(run, 1);
    let mut file = fs::OpenOptions::new().append(true).open(&segment).unwrap();
    file.write_all(b"{\"id\":\"broken\",\"status\":\"succ\n")
        .unwrap();
    file.write_all(b"\n").unwrap();
    // A valid line after them makes them middle lines, not a torn tail.
    let mut valid = serde_json::to_vec(&success("b")).unwrap();
    valid.push(b'\n');
    file.write_all(&valid).unwrap();
    drop(file);

    let (_journal, state) = RunDir::create_or_open(run, &manifest(), false).unwrap();
    assert!(state.report.torn_tail.is_none());
    let corrupt = &state.report.corrupt_lines;
    assert_eq!(corrupt.len(), 2);
    assert_eq!(corrupt[0].location.segment, segment);
    assert_eq!(corrupt[0].location.line, 2);
    assert_eq!(corrupt[1].location.line, 3);
    assert!(corrupt[0]
        .location
        .to_string()
        .ends_with("journal/000001.jsonl:2"));
    assert_eq!(corrupt[1].reason, "empty line");
    assert!(state.is_finished("a") && state.is_finished("b"));
    assert_eq!(state.prompt_count(), 2);
}

#[test]
fn changed_settings_are_refused_unless_forced() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    write_records(run, &[success("a")]);

    let mut changed = manifest();
    changed.sampling = json!({"temperature": 0.6, "max_tokens": 8192});
    changed.endpoints = vec!["http://localhost:8000/v1".into()];
    changed.seal();
    let err = RunDir::create_or_open(run, &changed, false).unwrap_err();
    let JournalError::SettingsChanged { changes, .. } = &err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(changes.len(), 2, "{changes:?}");
    let message = err.to_string();
    assert!(message.contains("manifest.json"), "{message}");
    assert!(
        message.contains("sampling.temperature: 1.0 → 0.6"),
        "{message}"
    );
    assert!(message.contains("endpoints"), "{message}");
    assert!(message.contains("--force"), "{message}");

    // A timestamp or version difference is not a settings change.
    let mut later = manifest();
    later.created_at = "2030-01-01T00:00:00Z".into();
    later.draftgen_version = "0.2.0".into();
    RunDir::create_or_open(run, &later, false).unwrap();

    let (journal, state) = RunDir::create_or_open(run, &changed, true).unwrap();
    assert!(state.is_finished("a"), "the journal is kept");
    // One writer per run: the next open needs this one closed.
    drop(journal);
    let written = RunDir::new(run).read_manifest().unwrap().unwrap();
    assert_eq!(written.fingerprint, changed.fingerprint);
    assert_eq!(written.previous_fingerprints, vec![manifest().fingerprint]);
    // Now the new settings resume without --force.
    RunDir::create_or_open(run, &changed, false).unwrap();

    // A journal whose manifest is gone is not silently adopted.
    fs::remove_file(run.join("manifest.json")).unwrap();
    let err = RunDir::create_or_open(run, &manifest(), false).unwrap_err();
    assert!(matches!(err, JournalError::MissingManifest { .. }), "{err}");
    assert!(err.to_string().contains("--force"));
    let (_journal, state) = RunDir::create_or_open(run, &manifest(), true).unwrap();
    assert!(state.is_finished("a"));
}

#[test]
fn segments_roll_and_resume_reads_them_in_order() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let options = JournalOptions {
        segment_max_bytes: 4096,
        sync_every_records: 3,
        sync_interval: Duration::from_secs(60),
    };
    let (mut journal, _) =
        RunDir::create_or_open_with(run, &manifest(), false, options.clone()).unwrap();
    for i in 0..100 {
        let r = record(
            &format!("p{}", i % 40),
            i / 40 + 1,
            Status::Failed,
            Some(ErrorClass::Network),
        );
        journal.append(&r).unwrap();
    }
    let stats = journal.close().unwrap();
    assert_eq!(stats.appended, 100);
    assert!(stats.syncs >= 33);
    let segments = fs::read_dir(run.join(JOURNAL_DIR)).unwrap().count();
    assert!(segments >= 8, "{segments} segments");
    for n in 1..segments as u32 {
        assert!(fs::metadata(segment_path(run, n)).unwrap().len() <= 4096);
    }
    // A later success in the last segment wins over earlier failures in the first ones.
    let (mut journal, state) =
        RunDir::create_or_open_with(run, &manifest(), false, options).unwrap();
    assert_eq!(state.report.segments, segments);
    assert_eq!(state.attempts("p0"), 3);
    assert_eq!(state.next_attempt("p0"), 4);
    journal
        .append(&record("p0", 4, Status::Success, None))
        .unwrap();
    journal.close().unwrap();
    let state = RunDir::new(run).read_state().unwrap();
    assert!(state.is_finished("p0"));
    assert_eq!(state.to_retry().count(), 39);
    assert_eq!(all_records(run).len(), 101);
}

#[test]
fn a_configured_secret_is_never_written() {
    let _no_spawn = no_spawn();
    let secret = "sk-or-v1-FAKEKEY0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let (mut journal, _) = RunDir::create_or_open(run, &manifest(), false).unwrap();
    journal.set_redact(secret);
    journal.set_redact(r#"we"ird\key"#);
    let mut leaky = success("a");
    leaky.error = Some(format!("401: invalid key {secret}"));
    leaky.request["headers"] = json!({"Authorization": format!("Bearer {secret}")});
    leaky.request["odd"] = json!(r#"we"ird\key"#);
    journal.append(&leaky).unwrap();
    journal.append(&success("b")).unwrap();
    let stats = journal.close().unwrap();
    assert_eq!(stats.redactions, 3);

    for entry in walk(run) {
        let bytes = fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret), "{}", entry.display());
        assert!(!text.contains("FAKEKEY"), "{}", entry.display());
        assert!(!text.contains(r#"we\"ird\\key"#), "{}", entry.display());
    }
    let records = all_records(run);
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[0].error.as_deref(),
        Some(format!("401: invalid key {REDACTED}").as_str())
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn summary_accounts_for_every_prompt_and_is_written_atomically() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    write_records(
        run,
        &[
            record("a", 1, Status::Failed, Some(ErrorClass::RateLimited)),
            record("a", 2, Status::Success, None),
            record("b", 1, Status::Failed, Some(ErrorClass::Timeout)),
            record("c", 1, Status::Failed, Some(ErrorClass::BadRequest)),
            record("d", 1, Status::Skipped, None),
            success("e"),
        ],
    );
    let (mut journal, mut state) = RunDir::create_or_open(run, &manifest(), false).unwrap();
    let new = success("f");
    journal.append(&new).unwrap();
    state.record(&new);
    journal.close().unwrap();

    let summary = Summary::from_state(&state, Duration::from_secs(2));
    assert_eq!(summary.total, 6);
    assert_eq!(
        (summary.succeeded, summary.failed, summary.skipped),
        (3, 2, 1)
    );
    assert_eq!(
        summary.succeeded + summary.failed + summary.skipped,
        summary.total
    );
    assert_eq!(summary.retryable, 1);
    assert_eq!(summary.failed_by_error_class[&ErrorClass::Timeout], 1);
    assert_eq!(summary.failed_by_error_class[&ErrorClass::BadRequest], 1);
    assert_eq!(summary.attempts, 7);
    assert_eq!(summary.attempts_by_status.failed, 3);
    assert_eq!(summary.attempts_by_error_class[&ErrorClass::RateLimited], 1);
    assert_eq!(summary.prompt_tokens, 36);
    assert_eq!(summary.completion_tokens, 27);
    assert_eq!(summary.session_requests, 1);
    assert_eq!(summary.requests_per_s, 0.5);

    RunDir::new(run).write_summary(&summary).unwrap();
    let text = fs::read_to_string(run.join("summary.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["failed_by_error_class"]["timeout"], 1);
    let back: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(back, summary);
    assert!(!run.join(".summary.json.tmp").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_writer_takes_records_from_many_tasks() {
    // Opens its run once: nothing to guard (see `SPAWNING`).
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().to_path_buf();
    let (journal, _) = RunDir::create_or_open(&run, &manifest(), false).unwrap();
    let writer = JournalWriter::spawn(journal, 64).unwrap();
    let mut tasks = Vec::new();
    for t in 0..20 {
        let sender = writer.sender();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                sender.send(success(&format!("t{t}-{i}"))).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stats = writer.close().await.unwrap();
    assert_eq!(stats.appended, 1000);
    let ids: HashSet<String> = all_records(&run).into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 1000);
}

// ---- kill -9 ----------------------------------------------------------------------------------

const CHILD_ENV: &str = "DRAFTGEN_JOURNAL_CRASH_CHILD";

/// Not a test on its own: when re-invoked by `kill_9_loses_and_duplicates_nothing` with
/// `CHILD_ENV` set, appends records forever and prints each id once `append` has returned.
#[test]
fn crash_child_writer() {
    let Ok(run) = std::env::var(CHILD_ENV) else {
        return;
    };
    let options = JournalOptions {
        segment_max_bytes: 256 * 1024,
        sync_every_records: 50,
        sync_interval: Duration::from_millis(20),
    };
    let (mut journal, state) =
        RunDir::create_or_open_with(&run, &manifest(), false, options).unwrap();
    let mut next = state.prompt_count();
    let mut out = std::io::stdout().lock();
    loop {
        let mut r = success(&format!("p{next:08}"));
        // Vary the line length so kills land at many offsets.
        r.response.as_mut().unwrap()["choices"][0]["message"]["content"] =
            json!("x".repeat(next % 3000));
        journal.append(&r).unwrap();
        writeln!(out, "{}", r.id).unwrap();
        out.flush().unwrap();
        next += 1;
    }
}

#[test]
fn kill_9_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let exe = std::env::current_exe().unwrap();
    let mut acknowledged = BTreeSet::new();
    let mut torn_tails = 0;
    let mut total = 0;
    for round in 0..8 {
        let spawning = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &run)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // `spawn` returns once the child has exec'd: its copies of this process's files are gone.
        drop(spawning);
        // Collect acknowledged ids on a thread; kill only once the child is writing, so every
        // round kills mid-stream however loaded the machine is.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // `pNNNNNNNN`: printed (one atomic pipe write) after `append` returned.
                if line.len() == 9 && line.starts_with("p0") && tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = rx.recv_timeout(Duration::from_secs(120));
        assert!(
            first.is_ok(),
            "round {round}: the child never wrote a record"
        );
        acknowledged.extend(first);
        std::thread::sleep(Duration::from_millis(rand::random_range(0..300)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        reader.join().unwrap();
        acknowledged.extend(rx.try_iter());

        let (_journal, state) = RunDir::create_or_open(&run, &manifest(), false).unwrap();
        torn_tails += usize::from(state.report.torn_tail.is_some());
        assert!(state.report.corrupt_lines.is_empty(), "round {round}");
        assert!(state.report.duplicate_successes.is_empty(), "round {round}");

        let ids: Vec<String> = all_records(&run).into_iter().map(|r| r.id).collect();
        let expected: Vec<String> = (0..ids.len()).map(|i| format!("p{i:08}")).collect();
        assert_eq!(
            ids, expected,
            "round {round}: records must be p0..pN in order, once each"
        );
        let unique: BTreeSet<String> = ids.iter().cloned().collect();
        for id in &acknowledged {
            assert!(
                unique.contains(id),
                "round {round}: acknowledged {id} was lost"
            );
        }
        assert_eq!(state.prompt_count(), ids.len());
        assert!(ids.len() > total, "round {round}: no new records");
        total = ids.len();
    }
    eprintln!(
        "kill -9: {total} records, {} acknowledged, {torn_tails} torn tails repaired",
        acknowledged.len()
    );
}

#[test]
fn duplicate_success_lines_are_reported_with_locations_and_the_first_kept() {
    let _no_spawn = no_spawn();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let mut second = success("a");
    second.attempt = 2;
    write_records(run, &[success("a"), success("b"), second]);
    let state = RunDir::new(run).read_state().unwrap();
    let duplicates = &state.report.duplicate_successes;
    assert_eq!(duplicates.len(), 1);
    assert_eq!(duplicates[0].id, "a");
    assert_eq!(duplicates[0].first.as_ref().unwrap().line, 1);
    assert_eq!(duplicates[0].duplicate.as_ref().unwrap().line, 3);
    assert_eq!(
        state.get("a").unwrap().disposition(),
        Disposition::Succeeded
    );
    assert_eq!(state.attempts("a"), 2);
}
