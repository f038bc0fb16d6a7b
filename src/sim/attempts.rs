//! Attempt numbers per request key, so fault draws differ between a request and its retry but
//! replay identically in a fresh simulator. Sharded maps keep 10,000 concurrent requests from
//! queueing on one lock; each lock is held for one hash-map update.

use std::collections::HashMap;
use std::sync::Mutex;

const SHARDS: usize = 64;

pub struct Attempts {
    shards: Vec<Mutex<HashMap<u64, u32>>>,
}

impl Default for Attempts {
    fn default() -> Self {
        Attempts {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl Attempts {
    /// This request's attempt number: 0 the first time the key is seen, then 1, 2, …
    pub fn next(&self, key: u64) -> u32 {
        let shard = &self.shards[(key % SHARDS as u64) as usize];
        // A poisoned shard only means another request panicked mid-update; the count is still usable.
        let mut map = shard
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let slot = map.entry(key).or_insert(0);
        let attempt = *slot;
        *slot = slot.saturating_add(1);
        attempt
    }
}
