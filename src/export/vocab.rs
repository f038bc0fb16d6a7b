//! The draft vocabulary: which target ids the draft model can emit, from loss-masked tokens only.
//!
//! Both trainers count every id where `loss_mask == 1`, keep the N most frequent, sort them
//! ascending and write `d2t[i] = used[i] - i` (int64, shape [N]; the target id of draft id `i`
//! is `i + d2t[i]`) and `t2d[j] = j ∈ used` (bool, shape [target vocab]). They differ in ties
//! and padding, so the rule is a choice (`--rule`), never a guess:
//!
//! * **SpecForge** (`specforge/data/preprocessing.py::process_token_dict_to_mappings` @a6b6b02;
//!   counts from `generate_vocab_mapping_file` / `training/vocab_mapping.py`): a `Counter` filled
//!   sample by sample with `unique(return_counts=True)`, so keys enter in order of first
//!   appearance (ascending id within a sample). If it holds fewer than N ids it is padded with
//!   ids from `set(range(N)) - existing` *in CPython's set order* at count 0 until it holds N
//!   (see `cpython_set`). Then `most_common(N)`: count descending, ties by insertion order.
//! * **speculators** (`src/speculators/train/vocab_mapping.py::build_vocab_mappings_from_distribution`
//!   @c05b95b): `sorted(ids, key=(-count, id))`, the first min(N, len) ids, then padded with the
//!   lowest ids in `range(N)` not yet chosen, in ascending order.
//!
//! Files: SpecForge loads `torch.load(path)` → `{"d2t", "t2d"}` (`modeling/draft/base.py::
//! load_vocab_mapping`); speculators loads `np.load("d2t.npy")`, `np.load("t2d.npy")`
//! (`scripts/train.py::_load_mappings`). Both are also written as `vocab.safetensors`.

use std::collections::HashMap;
use std::path::Path;

use super::{cpython_set, npy, torch_pickle, ExportError};
use crate::build::BuildDir;

/// Which trainer's selection rule to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    Specforge,
    Speculators,
}

/// Loss-masked token counts, with SpecForge's insertion order kept.
#[derive(Debug, Clone, Default)]
pub struct TokenCounts {
    /// `counts[id]`: loss-masked occurrences (dense; grows to the largest id seen).
    counts: Vec<u64>,
    /// Distinct ids in order of first appearance: sample order, ascending within a sample.
    first_seen: Vec<u32>,
    /// All loss-masked tokens.
    pub total: u64,
    /// Samples counted.
    pub samples: u64,
}

impl TokenCounts {
    /// Count one sample's loss-masked ids.
    pub fn add(&mut self, input_ids: &[u32], loss_mask: &[u8]) {
        let start = self.first_seen.len();
        for (&id, &m) in input_ids.iter().zip(loss_mask) {
            if m != 1 {
                continue;
            }
            let slot = id as usize;
            if slot >= self.counts.len() {
                self.counts.resize(slot + 1, 0);
            }
            if self.counts[slot] == 0 {
                self.first_seen.push(id);
            }
            self.counts[slot] += 1;
            self.total += 1;
        }
        // torch.unique returns sorted ids: within a sample, new keys enter ascending.
        self.first_seen[start..].sort_unstable();
        self.samples += 1;
    }

    /// Count every sample of a build directory.
    pub fn from_build(build: &BuildDir) -> Result<TokenCounts, ExportError> {
        let mut counts = TokenCounts::default();
        build.for_each::<_, ExportError>(|row| {
            counts.add(row.input_ids, row.loss_mask);
            Ok(())
        })?;
        Ok(counts)
    }

    pub fn count(&self, id: u32) -> u64 {
        self.counts.get(id as usize).copied().unwrap_or(0)
    }

    /// Distinct loss-masked ids.
    pub fn distinct(&self) -> usize {
        self.first_seen.len()
    }

    /// Largest id counted.
    pub fn max_id(&self) -> Option<u32> {
        self.first_seen.iter().copied().max()
    }

    /// `(id, count)` in first-appearance order: SpecForge's Counter as it stands.
    pub fn in_first_seen_order(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.first_seen.iter().map(|&id| (id, self.count(id)))
    }

    /// The chosen draft ids, ascending, by `rule`.
    pub fn select(&self, draft_vocab_size: usize, rule: Rule) -> Vec<u32> {
        let mut used = match rule {
            Rule::Specforge => self.select_specforge(draft_vocab_size),
            Rule::Speculators => self.select_speculators(draft_vocab_size),
        };
        used.sort_unstable();
        used
    }

    fn select_specforge(&self, n: usize) -> Vec<u32> {
        let mut entries: Vec<(u32, u64)> = self.in_first_seen_order().collect();
        if entries.len() < n {
            let pads = cpython_set::range_difference_order(n as u64, entries.len(), |id| {
                id <= u32::MAX as u64 && self.count(id as u32) > 0
            });
            for id in pads {
                entries.push((id as u32, 0));
                if entries.len() >= n {
                    break;
                }
            }
        }
        // most_common = heapq.nlargest(n, key=count): stable, so ties keep insertion order.
        entries.sort_by_key(|e| std::cmp::Reverse(e.1));
        entries.truncate(n);
        entries.into_iter().map(|(id, _)| id).collect()
    }

    fn select_speculators(&self, n: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = self.first_seen.clone();
        ids.sort_unstable_by(|&a, &b| self.count(b).cmp(&self.count(a)).then(a.cmp(&b)));
        ids.truncate(n);
        if ids.len() < n {
            let chosen: std::collections::HashSet<u32> = ids.iter().copied().collect();
            for id in 0..n as u32 {
                if !chosen.contains(&id) {
                    ids.push(id);
                }
                if ids.len() >= n {
                    break;
                }
            }
        }
        ids
    }

    /// Share of loss-masked tokens whose id is in `used` (0 when nothing was counted).
    pub fn coverage(&self, used: &[u32]) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let covered: u64 = used.iter().map(|&id| self.count(id)).sum();
        covered as f64 / self.total as f64
    }

    /// `{id: count}` for speculators' `token_freq.pt`, ascending ids (a dict's order does not
    /// matter to its readers).
    pub fn frequencies(&self) -> Vec<(u32, u64)> {
        let mut out: Vec<(u32, u64)> = self.in_first_seen_order().collect();
        out.sort_unstable();
        out
    }
}

/// The draft ↔ target maps.
#[derive(Debug, Clone, PartialEq)]
pub struct VocabMap {
    /// Chosen target ids, ascending.
    pub used: Vec<u32>,
    /// `d2t[i] = used[i] - i`.
    pub d2t: Vec<i64>,
    /// `t2d[j] = j ∈ used`, over the whole target vocabulary.
    pub t2d: Vec<bool>,
}

impl VocabMap {
    /// Build the maps; every chosen id must lie inside the target vocabulary.
    pub fn new(used: Vec<u32>, target_vocab_size: usize) -> Result<VocabMap, ExportError> {
        if let Some(&bad) = used.iter().find(|&&id| id as usize >= target_vocab_size) {
            return Err(ExportError::Invalid(format!(
                "token id {bad} is outside the target vocabulary of {target_vocab_size}: \
                 pass the model's --target-vocab-size (config.json vocab_size)"
            )));
        }
        let d2t = used
            .iter()
            .enumerate()
            .map(|(i, &id)| id as i64 - i as i64)
            .collect();
        let mut t2d = vec![false; target_vocab_size];
        for &id in &used {
            t2d[id as usize] = true;
        }
        Ok(VocabMap { used, d2t, t2d })
    }
}

/// One row of the coverage table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CoverageRow {
    pub draft_vocab_size: usize,
    /// Share of loss-masked training tokens the draft vocabulary covers.
    pub coverage: f64,
}

/// Coverage for each size (sizes above the target vocabulary are skipped).
pub fn coverage_table(
    counts: &TokenCounts,
    sizes: &[usize],
    rule: Rule,
    target_vocab_size: usize,
) -> Vec<CoverageRow> {
    sizes
        .iter()
        .filter(|&&n| n <= target_vocab_size)
        .map(|&n| CoverageRow {
            draft_vocab_size: n,
            coverage: counts.coverage(&counts.select(n, rule)),
        })
        .collect()
}

/// The files written by [`write_vocab`].
pub const SPECFORGE_FILE: &str = "vocab_mapping.pt";
pub const D2T_NPY: &str = "d2t.npy";
pub const T2D_NPY: &str = "t2d.npy";
pub const SAFETENSORS_FILE: &str = "vocab.safetensors";
pub const REPORT_FILE: &str = "vocab.json";

/// Write the maps in the rule's native format and as safetensors.
pub fn write_vocab(dir: &Path, map: &VocabMap, rule: Rule) -> Result<Vec<String>, ExportError> {
    let mut written = Vec::new();
    match rule {
        Rule::Specforge => {
            let path = dir.join(SPECFORGE_FILE);
            torch_pickle::save_tensor_dict(
                &path,
                &[
                    ("d2t", torch_pickle::Tensor::I64(&map.d2t)),
                    ("t2d", torch_pickle::Tensor::Bool(&map.t2d)),
                ],
            )?;
            written.push(SPECFORGE_FILE.to_string());
        }
        Rule::Speculators => {
            npy::write_i64(&dir.join(D2T_NPY), &map.d2t)?;
            npy::write_bool(&dir.join(T2D_NPY), &map.t2d)?;
            written.push(D2T_NPY.to_string());
            written.push(T2D_NPY.to_string());
        }
    }
    write_safetensors(&dir.join(SAFETENSORS_FILE), map)?;
    written.push(SAFETENSORS_FILE.to_string());
    Ok(written)
}

fn write_safetensors(path: &Path, map: &VocabMap) -> Result<(), ExportError> {
    use safetensors::tensor::{Dtype, TensorView};
    let d2t_bytes: Vec<u8> = map.d2t.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t2d_bytes: Vec<u8> = map.t2d.iter().map(|&b| b as u8).collect();
    let invalid = |e: safetensors::SafeTensorError| ExportError::format(path, e.to_string());
    let d2t = TensorView::new(Dtype::I64, vec![map.d2t.len()], &d2t_bytes).map_err(invalid)?;
    let t2d = TensorView::new(Dtype::BOOL, vec![map.t2d.len()], &t2d_bytes).map_err(invalid)?;
    let tensors: HashMap<String, TensorView<'_>> =
        [("d2t".to_string(), d2t), ("t2d".to_string(), t2d)]
            .into_iter()
            .collect();
    // `serialize_to_file` goes through a private temporary file (mode 0600); written here, the
    // file gets the same mode as every other export.
    let bytes = safetensors::serialize(&tensors, None).map_err(invalid)?;
    std::fs::write(path, bytes).map_err(|e| ExportError::io(path, e))
}

/// Above this share of padding ids, a draft vocabulary is mostly ids no training token uses.
pub const MOSTLY_PADDING: f64 = 0.5;

/// Share of the chosen ids that no loss-masked token uses (padding), 0 for an empty choice.
pub fn padding_share(padded: usize, draft_vocab_size: usize) -> f64 {
    if draft_vocab_size == 0 {
        return 0.0;
    }
    padded as f64 / draft_vocab_size as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(samples: &[&[u32]]) -> TokenCounts {
        let mut c = TokenCounts::default();
        for s in samples {
            c.add(s, &vec![1u8; s.len()]);
        }
        c
    }

    #[test]
    fn ties_differ_between_rules() {
        // 9 and 2 both appear once; 9 was seen first (sample 0), 2 is the lower id.
        let c = counts(&[&[9, 5, 5], &[2]]);
        assert_eq!(c.select(2, Rule::Specforge), vec![5, 9]);
        assert_eq!(c.select(2, Rule::Speculators), vec![2, 5]);
    }

    #[test]
    fn within_a_sample_ties_are_ascending_for_specforge() {
        let c = counts(&[&[9, 4]]);
        assert_eq!(c.select(1, Rule::Specforge), vec![4]);
    }

    #[test]
    fn padding_differs_between_rules() {
        // 7 distinct ids, N = 10, six of them below 10: SpecForge adds 8, 9, 6 (CPython set
        // order), speculators adds 6, 7, 8.
        let c = counts(&[&[0, 1, 2, 3, 4, 5, 100]]);
        assert_eq!(
            c.select(10, Rule::Specforge),
            vec![0, 1, 2, 3, 4, 5, 6, 8, 9, 100]
        );
        assert_eq!(
            c.select(10, Rule::Speculators),
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 100]
        );
    }

    #[test]
    fn maps_are_offsets_and_membership() {
        let map = VocabMap::new(vec![1, 4, 7], 8).unwrap();
        assert_eq!(map.d2t, vec![1, 3, 5]);
        assert_eq!(
            map.t2d,
            vec![false, true, false, false, true, false, false, true]
        );
        assert!(VocabMap::new(vec![9], 8).is_err());
    }

    #[test]
    fn unmasked_tokens_are_not_counted() {
        let mut c = TokenCounts::default();
        c.add(&[1, 2, 3], &[0, 1, 1]);
        assert_eq!((c.count(1), c.count(2), c.total), (0, 1, 2));
        assert!((c.coverage(&[2]) - 0.5).abs() < 1e-12);
    }
}
