//! [`JournalWriter`]: the journal as a single writer thread fed by a channel, for async code.
//!
//! The engine has thousands of request tasks but the journal must have one writer. Tasks send
//! finished [`Record`]s over a bounded channel (back-pressure if the disk falls behind); a dedicated
//! thread appends them and fsyncs on the batching schedule, also when idle. fsync blocks, which is
//! why this is a thread of its own and not a task on the engine's runtime.

use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::{Journal, JournalError, JournalStats, Record};

/// A handle that request tasks clone to send records to the writer thread.
#[derive(Debug, Clone)]
pub struct RecordSender(mpsc::Sender<Record>);

impl RecordSender {
    /// Queue `record` for appending; waits if the queue is full. Fails only if the writer stopped
    /// on an I/O error (returned by [`JournalWriter::close`]).
    pub async fn send(&self, record: Record) -> Result<(), JournalError> {
        self.0
            .send(record)
            .await
            .map_err(|_| JournalError::WriterGone)
    }

    /// [`RecordSender::send`] from synchronous code (not from inside an async task).
    pub fn blocking_send(&self, record: Record) -> Result<(), JournalError> {
        self.0
            .blocking_send(record)
            .map_err(|_| JournalError::WriterGone)
    }
}

/// The writer thread and a sender to it.
#[derive(Debug)]
pub struct JournalWriter {
    sender: RecordSender,
    thread: JoinHandle<Result<JournalStats, JournalError>>,
}

impl JournalWriter {
    /// Move `journal` to a writer thread with a queue of `capacity` records.
    pub fn spawn(journal: Journal, capacity: usize) -> Result<JournalWriter, JournalError> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let path = journal.current_segment().to_path_buf();
        let thread = std::thread::Builder::new()
            .name("draftgen-journal".into())
            .spawn(move || run(journal, rx))
            .map_err(JournalError::io(path))?;
        Ok(JournalWriter {
            sender: RecordSender(tx),
            thread,
        })
    }

    /// A sender for request tasks.
    pub fn sender(&self) -> RecordSender {
        self.sender.clone()
    }

    /// Queue one record (see [`RecordSender::send`]).
    pub async fn append(&self, record: Record) -> Result<(), JournalError> {
        self.sender.send(record).await
    }

    /// Stop accepting records, append everything queued, fsync, and return the counters. Every
    /// [`RecordSender`] must have been dropped, or this waits for them.
    pub async fn close(self) -> Result<JournalStats, JournalError> {
        let JournalWriter { sender, thread } = self;
        drop(sender);
        match tokio::task::spawn_blocking(move || thread.join()).await {
            Ok(Ok(result)) => result,
            _ => Err(JournalError::WriterGone),
        }
    }

    /// [`JournalWriter::close`] from synchronous code.
    pub fn close_blocking(self) -> Result<JournalStats, JournalError> {
        let JournalWriter { sender, thread } = self;
        drop(sender);
        thread.join().unwrap_or(Err(JournalError::WriterGone))
    }
}

fn run(mut journal: Journal, mut rx: mpsc::Receiver<Record>) -> Result<JournalStats, JournalError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(JournalError::io(journal.current_segment().to_path_buf()))?;
    let interval = journal.options().sync_interval;
    runtime.block_on(async {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                record = rx.recv() => match record {
                    Some(record) => journal.append(&record)?,
                    None => break,
                },
                _ = tick.tick() => journal.sync_if_due()?,
            }
        }
        Ok::<(), JournalError>(())
    })?;
    journal.close()
}
