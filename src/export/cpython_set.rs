//! The iteration order of CPython's `set(range(n)) - existing`, for SpecForge's vocabulary padding.
//!
//! SpecForge pads a too-small token dictionary with `for token in set(range(N)) - existing: ...
//! if len(token_dict) >= N: break` (`specforge/data/preprocessing.py`,
//! `process_token_dict_to_mappings`). When `existing` holds ids ≥ N, fewer pads are needed than
//! the set holds, so *which* ids are added depends on the order CPython iterates that set — and
//! that is not ascending: the difference is built into a fresh, small hash table where
//! `id & mask` wraps around. Users get whatever CPython does, so draftgen replays the table.
//!
//! Replayed from CPython 3.8–3.13 `Objects/setobject.c`: `set_difference` (copy path when
//! `len(so) >> 2 > len(other)`, else a new set filled in `so`'s order), `set_add_entry` (hash of a
//! small int is the int; `LINEAR_PROBES` = 9, `PERTURB_SHIFT` = 5; resize when
//! `fill * 5 >= mask * 3` to `used * 4`, or `used * 2` above 50,000) and `set_table_resize` /
//! `set_insert_clean`. `tests/py/check_export.py` holds this equal to the real interpreter.
//! No crate models CPython's set layout, hence this file.

const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;
const MIN_SIZE: usize = 8;

/// A CPython set of non-negative ints, reduced to what decides iteration order.
struct IntSet {
    table: Vec<Option<u64>>,
    used: usize,
}

impl IntSet {
    fn new() -> IntSet {
        IntSet {
            table: vec![None; MIN_SIZE],
            used: 0,
        }
    }

    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    /// `set_insert_clean` (also the probe sequence of `set_add_entry` on a table without dummies).
    fn insert_clean(table: &mut [Option<u64>], key: u64) {
        let mask = table.len() - 1;
        let mut perturb = key;
        let mut i = (key as usize) & mask;
        loop {
            if table[i].is_none() {
                table[i] = Some(key);
                return;
            }
            if i + LINEAR_PROBES <= mask {
                if let Some(slot) = table[i + 1..=i + LINEAR_PROBES]
                    .iter_mut()
                    .find(|s| s.is_none())
                {
                    *slot = Some(key);
                    return;
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        }
    }

    /// `set_add_entry` for a key known to be absent.
    fn add(&mut self, key: u64) {
        Self::insert_clean(&mut self.table, key);
        self.used += 1;
        // No deletions ever happen here, so fill == used.
        if self.used * 5 >= self.mask() * 3 {
            let minused = if self.used > 50_000 {
                self.used * 2
            } else {
                self.used * 4
            };
            self.resize(minused);
        }
    }

    /// `set_table_resize`: the smallest power of two above `minused`, entries re-inserted in
    /// old-table order.
    fn resize(&mut self, minused: usize) {
        let mut size = MIN_SIZE;
        while size <= minused {
            size <<= 1;
        }
        let mut table = vec![None; size];
        for key in self.table.iter().flatten() {
            Self::insert_clean(&mut table, *key);
        }
        self.table = table;
    }
}

/// The ids of `set(range(n)) - existing` in the order CPython iterates them. `existing_len`
/// is `len(existing)` (the number of distinct ids counted so far, any size).
pub fn range_difference_order(
    n: u64,
    existing_len: usize,
    existing: impl Fn(u64) -> bool,
) -> Vec<u64> {
    let missing = (0..n).filter(|&id| !existing(id));
    // `set(range(n))` itself iterates ascending: its table is always larger than n.
    if ((n as usize) >> 2) > existing_len {
        // set_copy_and_difference: a copy of so's table (larger than n), then discards.
        return missing.collect();
    }
    let mut set = IntSet::new();
    for id in missing {
        set.add(id);
    }
    set.table.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_table_wraps_around() {
        // python3 -c "print(list(set(range(10)) - {0,1,2,3,4,5,100}))" → [8, 9, 6, 7]
        let existing = [0u64, 1, 2, 3, 4, 5, 100];
        let order = range_difference_order(10, existing.len(), |id| existing.contains(&id));
        assert_eq!(order, vec![8, 9, 6, 7]);
    }

    #[test]
    fn copy_path_is_ascending() {
        let order = range_difference_order(40, 2, |id| id == 3 || id == 7);
        let expected: Vec<u64> = (0..40).filter(|&i| i != 3 && i != 7).collect();
        assert_eq!(order, expected);
    }
}
