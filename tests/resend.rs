//! `draftgen generate` against a server that closes every reused keep-alive connection after
//! reading the request on it: each request the server read is an attempt in the journal (none is
//! sent again unrecorded), and the retry policy brings every prompt home.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

/// Read one request (head + content-length body); false if the client closed first.
async fn read_request(socket: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap_or(0));
            if buf.len() >= end + 4 + len {
                return true;
            }
        }
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// Per connection: answer the first request (kept alive), read the second and close.
fn start_server(requests: Arc<AtomicUsize>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            while let Ok((mut socket, _)) = listener.accept().await {
                let requests = requests.clone();
                tokio::spawn(async move {
                    if !read_request(&mut socket).await {
                        return;
                    }
                    requests.fetch_add(1, Ordering::SeqCst);
                    let body = json!({
                        "id": "gen-1", "object": "chat.completion", "model": "test/model",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "an answer"}}],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
                    })
                    .to_string();
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                    if read_request(&mut socket).await {
                        requests.fetch_add(1, Ordering::SeqCst);
                    }
                    drop(socket);
                });
            }
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

fn journal(run: &Path) -> Vec<Value> {
    let mut segments: Vec<_> = std::fs::read_dir(run.join("journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    segments
        .iter()
        .flat_map(|s| {
            std::fs::read_to_string(s)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

#[test]
fn every_request_a_closed_reused_connection_swallowed_is_a_journaled_attempt() {
    let requests = Arc::new(AtomicUsize::new(0));
    let base_url = start_server(requests.clone());
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    let mut text = String::new();
    for i in 0..6 {
        text.push_str(
            &json!({"id": format!("p{i}"), "source": "test",
                    "messages": [{"role": "user", "content": format!("question {i}")}]})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&prompts, text).unwrap();
    let config = dir.path().join("run.toml");
    // One request at a time, so every connection is reused by the next prompt.
    std::fs::write(
        &config,
        r#"[request]
model = "test/model"
max_tokens = 8
[concurrency]
initial = 1
min = 1
max = 1
[retry]
max_attempts = 10
base_ms = 1
cap_s = 0.01
"#,
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = Command::new(BIN)
        .args(["generate", "--prompts"])
        .arg(&prompts)
        .arg("--run")
        .arg(&run)
        .arg("--config")
        .arg(&config)
        .args(["--base-url", &base_url, "--progress", "none"])
        .env_remove("OPENROUTER_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    let records = journal(&run);
    let failed: Vec<&Value> = records
        .iter()
        .filter(|r| r["status"] != "success")
        .collect();
    assert!(!failed.is_empty(), "the server swallowed no request?");
    for record in &failed {
        assert_eq!(record["error_class"], "network", "{record}");
        let error = record["error"].as_str().unwrap_or_default();
        assert!(error.contains("may have processed"), "{error}");
    }
    let succeeded: Vec<&str> = records
        .iter()
        .filter(|r| r["status"] == "success")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(succeeded.len(), 6, "every prompt retried to success");
    // The invariant: every request the server read is an attempt in the journal.
    assert_eq!(requests.load(Ordering::SeqCst), records.len());
}
