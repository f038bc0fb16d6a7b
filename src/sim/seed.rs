//! Deterministic randomness: every choice the simulator makes is drawn from a generator seeded by
//! (config seed, request key, purpose), so a retried or resumed request sees the same answer.

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The identity of a request's conversation: a hash of its messages, tools and `seed` field.
/// Sampling settings (`max_tokens`, `stream`) are deliberately left out: the model would write
/// the same tokens, only cut or delivered differently.
pub fn request_key(messages: &Value, tools: &Value, request_seed: Option<u64>) -> u64 {
    let mut hasher = Sha256::new();
    // serde_json keeps insertion order, so the same body always hashes the same.
    hasher.update(messages.to_string().as_bytes());
    hasher.update([0]);
    hasher.update(tools.to_string().as_bytes());
    hasher.update([0]);
    hasher.update(request_seed.unwrap_or(0).to_le_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// What a generator is for; distinct purposes give independent streams.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    Answer,
    Fault,
    Ids,
    /// Tool-call defects of named providers (`faults::ToolDefectRates`).
    Defect,
}

/// A generator for one purpose of one request (and attempt, for per-attempt choices).
pub fn rng(seed: u64, key: u64, purpose: Purpose, attempt: u32) -> StdRng {
    let mut state = splitmix(seed ^ splitmix(key));
    state = splitmix(state ^ (purpose as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    state = splitmix(state ^ u64::from(attempt));
    StdRng::seed_from_u64(state)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` lowercase hex digits drawn from `rng` (ids that look random but are reproducible).
pub fn hex(rng: &mut impl rand::Rng, n: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..n)
        .map(|_| DIGITS[rng.random_range(0..16)] as char)
        .collect()
}
