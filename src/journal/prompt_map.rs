//! The prompt map of the resume index: prompt id → [`PromptState`] (where the prompt stands), sharded
//! by a hash of the id so that a window of records is merged one task per shard, each into its own
//! small hash table.

use std::borrow::Cow;
use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry as TableEntry, HashTable};
use rustc_hash::FxBuildHasher;

use super::Status;
use crate::api::ErrorClass;

/// Compact position of a line: (segment number, line number). A segment holds far fewer than
/// 2^32 lines, and the index keeps one of these per prompt, so it is kept small.
pub(super) type Pos = (u32, u32);

/// Where a prompt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Has a success record.
    Succeeded,
    /// Latest record is `skipped`.
    Skipped,
    /// Latest record failed with a permanent class (or none): do not retry.
    FailedPermanently(Option<ErrorClass>),
    /// Latest record failed with a transient class: retry (the engine caps attempts).
    Retry(ErrorClass),
}

impl Disposition {
    /// Whether the prompt needs no more attempts.
    pub fn is_finished(self) -> bool {
        !matches!(self, Disposition::Retry(_))
    }
}

/// Everything the journal says about one prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromptState {
    /// Records (attempts) written for this prompt.
    pub attempts: u32,
    /// The highest `attempt` number seen.
    pub last_attempt: u32,
    pub last_status: Status,
    pub last_error_class: Option<ErrorClass>,
    /// The latest record's `not_before_ms` (a `Retry-After` that still holds on resume).
    pub not_before_ms: Option<u64>,
    succeeded: bool,
    /// Where the first success record is, when it was read from the journal.
    success_at: Option<Pos>,
}

impl PromptState {
    pub fn succeeded(&self) -> bool {
        self.succeeded
    }

    pub fn disposition(&self) -> Disposition {
        if self.succeeded() {
            return Disposition::Succeeded;
        }
        match (self.last_status, self.last_error_class) {
            (Status::Success, _) => Disposition::Succeeded,
            (Status::Skipped, _) => Disposition::Skipped,
            (Status::Failed, Some(class)) if class.is_transient() => Disposition::Retry(class),
            (Status::Failed, class) => Disposition::FailedPermanently(class),
        }
    }

    /// The `attempt` number the next try of this prompt should carry.
    pub fn next_attempt(&self) -> u32 {
        self.last_attempt.max(self.attempts) + 1
    }
}

/// Shards of the prompt map (a power of two). Partitioning the ids by hash lets the shards be
/// merged in parallel, and keeps each shard's table small enough to stay in cache while it is
/// built: one table of a million ids costs a cache miss per record.
pub(super) const SHARDS: usize = 64;

/// One prompt in a shard: its id (a range of the shard's `ids`) and state. The hash is kept so a
/// growing table never rehashes the ids.
#[derive(Debug, Clone)]
struct Slot {
    hash: u64,
    start: usize,
    len: usize,
    state: PromptState,
}

/// Part of the prompt map: ids are stored back to back in one string instead of one allocation
/// each (a million small allocations, and frees, showed up in the resume profile).
#[derive(Debug, Clone, Default)]
pub(super) struct Shard {
    ids: String,
    table: HashTable<Slot>,
}

impl Shard {
    fn id(&self, slot: &Slot) -> &str {
        &self.ids[slot.start..slot.start + slot.len]
    }

    pub(super) fn get(&self, id: &str, hash: u64) -> Option<&PromptState> {
        self.table
            .find(hash, |s| s.hash == hash && self.id(s) == id)
            .map(|s| &s.state)
    }

    /// The state of `id`, inserted as `new` if absent.
    pub(super) fn upsert(&mut self, id: &str, hash: u64, new: PromptState) -> &mut PromptState {
        let ids = &self.ids;
        let entry = self.table.entry(
            hash,
            |s| s.hash == hash && &ids[s.start..s.start + s.len] == id,
            |s| s.hash,
        );
        match entry {
            TableEntry::Occupied(slot) => &mut slot.into_mut().state,
            TableEntry::Vacant(slot) => {
                let start = self.ids.len();
                self.ids.push_str(id);
                let slot = slot.insert(Slot {
                    hash,
                    start,
                    len: id.len(),
                    state: new,
                });
                &mut slot.into_mut().state
            }
        }
    }
}

/// Prompt id → state, sharded by id hash (see [`SHARDS`]).
#[derive(Debug, Clone)]
pub(super) struct PromptMap {
    pub(super) shards: Vec<Shard>,
}

impl Default for PromptMap {
    fn default() -> Self {
        PromptMap {
            shards: vec![Shard::default(); SHARDS],
        }
    }
}

pub(super) fn id_hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

/// The shard of a hash: bits the tables do not use (they index with the low bits and tag with
/// the top seven), so ids within a shard still spread over its table.
pub(super) fn shard_of(hash: u64) -> usize {
    (hash >> 32) as usize & (SHARDS - 1)
}

impl PromptMap {
    pub(super) fn get(&self, id: &str) -> Option<&PromptState> {
        let hash = id_hash(id);
        self.shards[shard_of(hash)].get(id, hash)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &PromptState)> {
        self.shards
            .iter()
            .flat_map(|shard| shard.table.iter().map(move |s| (shard.id(s), &s.state)))
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.table.len()).sum()
    }

    /// Room for `additional` more ids, spread over the shards (with some slack for unevenness).
    pub(super) fn reserve(&mut self, additional: usize) {
        let per_shard = additional / SHARDS + additional / SHARDS / 8;
        for shard in &mut self.shards {
            shard.table.reserve(per_shard, |s| s.hash);
        }
    }
}

/// What one record changes in its prompt's state.
pub(super) struct Update {
    pub(super) attempt: u32,
    pub(super) status: Status,
    pub(super) error_class: Option<ErrorClass>,
    pub(super) not_before_ms: Option<u64>,
    pub(super) pos: Option<Pos>,
}

impl Update {
    /// The state of a prompt before its first record.
    pub(super) fn initial(&self) -> PromptState {
        PromptState {
            attempts: 0,
            last_attempt: 0,
            last_status: self.status,
            last_error_class: self.error_class,
            not_before_ms: None,
            succeeded: false,
            success_at: None,
        }
    }

    /// Apply to `state`. Returns where the first success is (if known) when this record is a
    /// second success, which is reported and otherwise ignored.
    pub(super) fn apply(&self, state: &mut PromptState) -> Option<Option<Pos>> {
        state.attempts += 1;
        state.last_attempt = state.last_attempt.max(self.attempt);
        let is_success = self.status == Status::Success;
        if state.succeeded {
            // Finished already: a later line changes the totals but not the outcome.
            return is_success.then_some(state.success_at);
        }
        state.last_status = self.status;
        state.last_error_class = self.error_class;
        state.not_before_ms = self.not_before_ms;
        if is_success {
            state.succeeded = true;
            state.success_at = self.pos;
        }
        None
    }
}

/// A record read from the journal, waiting in its shard's partition to be merged.
pub(super) struct Pending<'a> {
    pub(super) id: Cow<'a, str>,
    pub(super) hash: u64,
    pub(super) update: Update,
}

/// A second success found while merging a shard: id, first success, this one.
pub(super) type FoundDuplicate<'a> = (Cow<'a, str>, Option<Pos>, Option<Pos>);

/// Merge one shard's pending records, in journal order.
pub(super) fn merge_shard<'a>(
    shard: &mut Shard,
    pending: &mut Vec<Pending<'a>>,
) -> Vec<FoundDuplicate<'a>> {
    let mut duplicates = Vec::new();
    for p in pending.drain(..) {
        let state = shard.upsert(&p.id, p.hash, p.update.initial());
        if let Some(first) = p.update.apply(state) {
            duplicates.push((p.id, first, p.update.pos));
        }
    }
    duplicates
}
