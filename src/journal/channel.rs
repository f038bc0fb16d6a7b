//! [`JournalWriter`]: the journal as a single writer thread fed by a channel, for async code.
//!
//! The engine has thousands of request tasks but the journal must have one writer. Tasks send
//! finished [`Record`]s over a bounded channel (back-pressure if the disk falls behind); a dedicated
//! thread appends them and fsyncs on the batching schedule, also when idle. fsync blocks, which is
//! why this is a thread of its own and not a task on the engine's runtime.
//!
//! The thread can also keep a [`ResumeState`] current with every record it writes
//! ([`JournalWriter::spawn_tracking`]): the engine's single-threaded runtime then needs no
//! bookkeeping task of its own, which would queue behind thousands of request tasks.

use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::{EncodedRecord, Journal, JournalError, JournalStats, Record, ResumeState};

/// Records queued for the writer thread taken per batch: bounds the batch buffer while still
/// turning a burst of answers into a few large writes.
const BATCH: usize = 256;

/// How long the writer waits after the first record of a batch for more to queue up. Durability
/// is unchanged (records are on disk after the next sync, every second at most); this only
/// trades a few milliseconds of delay for far fewer wake-ups and writes.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

/// What goes over the writer's queue.
#[derive(Debug)]
enum Queued {
    // Boxed: queue slots are sized by the largest variant, and the engine's encoded records are
    // the common case.
    Record(Box<Record>),
    Encoded(EncodedRecord),
}

/// A handle that request tasks clone to send records to the writer thread.
#[derive(Debug, Clone)]
pub struct RecordSender(mpsc::Sender<Queued>);

impl RecordSender {
    /// Queue `record` for appending; waits if the queue is full. Fails only if the writer stopped
    /// on an I/O error (returned by [`JournalWriter::close`]).
    pub async fn send(&self, record: Record) -> Result<(), JournalError> {
        self.0
            .send(Queued::Record(Box::new(record)))
            .await
            .map_err(|_| JournalError::WriterGone)
    }

    /// [`RecordSender::send`] for a record already serialized in the sending task (the engine's
    /// path: the serialization runs on every worker instead of the one writer thread, and the queue
    /// holds compact lines).
    pub async fn send_encoded(&self, record: EncodedRecord) -> Result<(), JournalError> {
        self.0
            .send(Queued::Encoded(record))
            .await
            .map_err(|_| JournalError::WriterGone)
    }

    /// [`RecordSender::send`] from synchronous code (not from inside an async task).
    pub fn blocking_send(&self, record: Record) -> Result<(), JournalError> {
        self.0
            .blocking_send(Queued::Record(Box::new(record)))
            .map_err(|_| JournalError::WriterGone)
    }
}

/// The writer thread and a sender to it.
/// What the writer thread hands back: its counters and the tracked state, if any.
type Closed = (JournalStats, Option<ResumeState>);

#[derive(Debug)]
pub struct JournalWriter {
    sender: RecordSender,
    thread: JoinHandle<Result<Closed, JournalError>>,
}

impl JournalWriter {
    /// Move `journal` to a writer thread with a queue of `capacity` records.
    pub fn spawn(journal: Journal, capacity: usize) -> Result<JournalWriter, JournalError> {
        Self::start(journal, None, capacity)
    }

    /// [`JournalWriter::spawn`], also keeping `state` current with every record written; get it
    /// back from [`JournalWriter::close_tracking`].
    pub fn spawn_tracking(
        journal: Journal,
        state: ResumeState,
        capacity: usize,
    ) -> Result<JournalWriter, JournalError> {
        Self::start(journal, Some(state), capacity)
    }

    fn start(
        journal: Journal,
        state: Option<ResumeState>,
        capacity: usize,
    ) -> Result<JournalWriter, JournalError> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let path = journal.current_segment().to_path_buf();
        let thread = std::thread::Builder::new()
            .name("draftgen-journal".into())
            .spawn(move || run(journal, state, rx))
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
        self.close_tracking().await.map(|(stats, _)| stats)
    }

    /// [`JournalWriter::close`], also returning the state given to
    /// [`JournalWriter::spawn_tracking`] with every written record applied.
    pub async fn close_tracking(self) -> Result<Closed, JournalError> {
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
        thread
            .join()
            .unwrap_or(Err(JournalError::WriterGone))
            .map(|(stats, _)| stats)
    }
}

fn run(
    mut journal: Journal,
    mut state: Option<ResumeState>,
    mut rx: mpsc::Receiver<Queued>,
) -> Result<Closed, JournalError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(JournalError::io(journal.current_segment().to_path_buf()))?;
    let interval = journal.options().sync_interval;
    runtime.block_on(async {
        let mut batch = Vec::with_capacity(BATCH);
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                record = rx.recv() => match record {
                    Some(first) => {
                        // Let a burst gather: one wake-up of this thread and one write for many
                        // records, rather than a futex wake and a write per record.
                        if rx.len() < BATCH {
                            tokio::time::sleep(LINGER).await;
                        }
                        append_queued(&mut journal, state.as_mut(), &mut rx, first, &mut batch)?
                    }
                    None => break,
                },
                _ = tick.tick() => journal.sync_if_due()?,
            }
        }
        Ok::<(), JournalError>(())
    })?;
    Ok((journal.close()?, state))
}

/// Append `first` and whatever else is already queued (up to [`BATCH`]), encoded records in one
/// batch write, in queue order.
fn append_queued(
    journal: &mut Journal,
    mut state: Option<&mut ResumeState>,
    rx: &mut mpsc::Receiver<Queued>,
    first: Queued,
    batch: &mut Vec<EncodedRecord>,
) -> Result<(), JournalError> {
    batch.clear();
    let mut next = Some(first);
    let mut taken = 0;
    while let Some(item) = next.take() {
        taken += 1;
        match item {
            Queued::Encoded(record) => batch.push(record),
            Queued::Record(record) => {
                // Keep queue order: what is batched so far goes first.
                append_batch(journal, state.as_deref_mut(), batch)?;
                journal.append(&record)?;
                if let Some(state) = state.as_deref_mut() {
                    state.record(&record);
                }
            }
        }
        if taken < BATCH {
            next = rx.try_recv().ok();
        }
    }
    append_batch(journal, state, batch)
}

/// Write `batch`, then account for it in `state` (a record counts once it is written).
fn append_batch(
    journal: &mut Journal,
    state: Option<&mut ResumeState>,
    batch: &mut Vec<EncodedRecord>,
) -> Result<(), JournalError> {
    journal.append_encoded(batch)?;
    if let Some(state) = state {
        for record in batch.iter() {
            state.record_meta(&record.meta);
        }
    }
    batch.clear();
    Ok(())
}
