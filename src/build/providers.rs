//! Who answered each record, and under which shape and conventions its row is rebuilt.
//!
//! A run's answers come from several stacks: each endpoint has its recorded server
//! (`manifest.json`), and behind OpenRouter each provider (the answer's `provider`) has its own.
//! A record's [`group`](Providers::group) is its endpoint plus its journaled `provider`. Before any row is
//! built, [`Providers::learn`] reads the whole journal once: it counts every group's answers
//! and, for a group whose server the run did not declare (OpenRouter, `generic`), reads the
//! evidence of its answers for each convention of `reconstruct::infer`. Each group is then
//! rebuilt under the conventions its own answers settle; a declared server's endpoint is
//! rebuilt as declared, nothing inferred. `build.json` lists every group ([`ProviderReport`]).
//!
//! Cost and memory: only the first [`EVIDENCE_ANSWERS`] answers of a group are rebuilt for
//! evidence (the journal is append-only, so a resumed run's first answers stay first and the
//! decision converges as the run grows); the others are only counted from their small fields.
//! What is held is one tally per group, not the records.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::api::ServerKind;
use crate::journal::record::Origin;
use crate::journal::{Manifest, Record, Status};
use crate::model::Profile;
use crate::reconstruct::infer::{self, Convention, Evidence, GroupEvidence, Tally, CONVENTIONS};
use crate::reconstruct::ReconstructOptions;

use super::lines::{self, JournalLines};
use super::{BuildError, ReadRecord};

/// Answers of one group rebuilt for evidence, at most. 256: far above
/// [`infer::MIN_ANSWERS`], so a convention's share is measured on enough answers, and small
/// beside a run, so inference costs a build a few hundred extra rebuilds per provider.
pub const EVIDENCE_ANSWERS: u64 = 256;

/// One endpoint + provider and what is known of it.
#[derive(Clone)]
pub struct Group {
    pub endpoint: String,
    pub provider: Option<String>,
    /// The endpoint's recorded server shape.
    pub options: ReconstructOptions,
    /// The endpoint's server was not declared: its conventions are inferred.
    pub infers: bool,
    pub answers: u64,
    /// Answers picked for evidence (≤ [`EVIDENCE_ANSWERS`]).
    scheduled: u64,
    pub evidence: GroupEvidence,
    pub adopted: Vec<&'static dyn Convention>,
}

/// The run's groups and the shapes its endpoints were recorded with.
#[derive(Default)]
pub struct Providers {
    by_endpoint: HashMap<String, ReconstructOptions>,
    /// For an endpoint the manifest does not list (older manifests): the run's first.
    fallback: ReconstructOptions,
    groups: Vec<Group>,
    index: HashMap<(String, Option<String>), usize>,
}

/// The small fields of a journal line that name its group.
#[derive(Deserialize)]
struct Head {
    status: Status,
    #[serde(default)]
    endpoint: String,
    /// The answer's `provider`, as `generate` journals it (`api/facts.rs`).
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    origin: Origin,
}

impl Head {
    /// The line's small fields, read from its prefix: they come before `,"request":`
    /// (journal/record.rs keeps them first, and inside a JSON string that text is escaped), so
    /// the request and the answer are not parsed. A line written otherwise is parsed whole.
    fn of(line: &[u8]) -> Option<Head> {
        if let Some(at) = request_key(line) {
            let mut prefix = Vec::with_capacity(at + 1);
            prefix.extend_from_slice(&line[..at]);
            prefix.push(b'}');
            if let Ok(head) = serde_json::from_slice(&prefix) {
                return Some(head);
            }
        }
        serde_json::from_slice(line).ok()
    }
}

/// Where the comma before the first `"request"` key of `line` is: `,"request":` as serde_json
/// writes it, or with whitespace around the comma and colon (`, "request": `, as Python's
/// `json.dumps` writes). Inside a JSON string every `"` follows a backslash, so a quote after a
/// comma or whitespace is never in one.
fn request_key(line: &[u8]) -> Option<usize> {
    const KEY: &[u8] = br#""request""#;
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    memchr::memmem::find_iter(line, KEY).find_map(|at| {
        let before = line[..at].iter().rposition(|b| !is_space(b))?;
        let after = line[at + KEY.len()..].iter().find(|b| !is_space(b))?;
        (line[before] == b',' && *after == b':').then_some(before)
    })
}

impl Providers {
    /// The endpoints' shapes from the manifest (`spaces` forces spaces around added tokens on,
    /// `build --spaces-around-special-tokens`); no group yet.
    pub fn new(manifest: Option<&Manifest>, spaces: bool) -> Providers {
        let mut by_endpoint = HashMap::new();
        let mut fallback = ReconstructOptions::default();
        if let Some(manifest) = manifest {
            fallback = ReconstructOptions::for_run(manifest);
            for server in &manifest.servers {
                by_endpoint
                    .entry(server.endpoint.clone())
                    .or_insert_with(|| ReconstructOptions::for_server(server));
            }
        }
        fallback.spaces_around_special_tokens |= spaces;
        for options in by_endpoint.values_mut() {
            options.spaces_around_special_tokens |= spaces;
        }
        Providers {
            by_endpoint,
            fallback,
            ..Providers::default()
        }
    }

    /// The group of `endpoint` + `provider`, created on first sight.
    fn group_mut(&mut self, endpoint: &str, provider: Option<String>) -> usize {
        let key = (endpoint.to_string(), provider);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let options = self
            .by_endpoint
            .get(endpoint)
            .cloned()
            .unwrap_or_else(|| self.fallback.clone());
        let infers = matches!(options.kind, ServerKind::OpenRouter | ServerKind::Generic);
        self.groups.push(Group {
            endpoint: key.0.clone(),
            provider: key.1.clone(),
            options,
            infers,
            answers: 0,
            scheduled: 0,
            evidence: GroupEvidence::default(),
            adopted: Vec::new(),
        });
        self.index.insert(key, self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// The group a record belongs to (every successful record was seen by [`Self::learn`]).
    pub fn group(&self, record: &Record) -> Option<usize> {
        self.index
            .get(&(record.endpoint.clone(), record.provider.clone()))
            .copied()
    }

    /// The shape and conventions to rebuild a record with.
    pub fn rebuild_with(
        &self,
        group: Option<usize>,
        endpoint: &str,
    ) -> (&ReconstructOptions, &[&'static dyn Convention]) {
        match group.and_then(|g| self.groups.get(g)) {
            Some(g) => (&g.options, &g.adopted),
            None => (
                self.by_endpoint.get(endpoint).unwrap_or(&self.fallback),
                &[],
            ),
        }
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Read the whole journal once: every group's answers, and the evidence of each inferring
    /// group's first answers; then adopt what each group's evidence settles. Each segment is
    /// read in blocks and its lines' heads read on all cores ([`lines::line_chunks`]): only the
    /// lines picked for evidence are parsed whole.
    pub fn learn(
        &mut self,
        profile: &Profile,
        journal_dir: &Path,
        batch: usize,
    ) -> Result<(), BuildError> {
        let lines = JournalLines::open(journal_dir).map_err(|e| BuildError::io(journal_dir, e))?;
        // Chunks per window: the heads held at once stay a few thousand lines' worth.
        let window = rayon::current_num_threads().max(1) * 4;
        let chunk_bytes = (batch.max(1) * 1024).clamp(1 << 16, 4 << 20);
        for path in lines.segment_paths() {
            let mut blocks = lines::SegmentBlocks::open(path, window * chunk_bytes)
                .map_err(|e| BuildError::io(path, e))?;
            let mut next = blocks.next_block();
            while let Some(block) = next.map_err(|e| BuildError::io(path, e))? {
                // The next block is read while this one's heads are read on the other cores.
                let heads: Vec<Vec<(Head, &[u8])>>;
                (next, heads) = rayon::join(
                    || blocks.next_block(),
                    || {
                        lines::line_chunks(&block, chunk_bytes)
                            .par_iter()
                            .map(|chunk| {
                                lines::lines_of(chunk)
                                    .filter_map(|line| Head::of(line).map(|head| (head, line)))
                                    .collect()
                            })
                            .collect()
                    },
                );
                let picked = self.count(heads.into_iter().flatten());
                self.add_evidence(profile, &picked);
            }
        }
        for group in &mut self.groups {
            group.adopted = group.evidence.adopted();
            group.options.shapes_ruled_out = group.evidence.shapes_ruled_out();
        }
        Ok(())
    }

    /// Count each successful line in its group; the lines picked for evidence, with their group.
    fn count<'a>(
        &mut self,
        heads: impl Iterator<Item = (Head, &'a [u8])>,
    ) -> Vec<(usize, &'a [u8])> {
        let mut picked = Vec::new();
        for (head, line) in heads {
            if head.status != Status::Success {
                continue;
            }
            let g = self.group_mut(&head.endpoint, head.provider);
            let group = &mut self.groups[g];
            group.answers += 1;
            // A conversation's turns count too: each turn record is the answer its
            // group's provider gave to that turn's request.
            if group.infers
                && head.origin == Origin::Generated
                && group.scheduled < EVIDENCE_ANSWERS
            {
                group.scheduled += 1;
                picked.push((g, line));
            }
        }
        picked
    }

    /// Rebuild the picked lines for evidence (on all cores) and tally it in their groups.
    fn add_evidence(&mut self, profile: &Profile, picked: &[(usize, &[u8])]) {
        let groups = &self.groups;
        let evidence: Vec<(usize, Option<LineEvidence>)> = picked
            .par_iter()
            .map(|&(g, bytes)| (g, evidence_of_line(profile, &groups[g].options, bytes)))
            .collect();
        for (g, read) in evidence {
            if let Some((e, form, reasoning)) = read {
                let evidence = &mut self.groups[g].evidence;
                evidence.add(&e);
                if let Some(form) = form {
                    *evidence.id_forms.entry(form).or_default() += 1;
                }
                if let Some(field) = reasoning {
                    *evidence.reasoning_fields.entry(field).or_default() += 1;
                }
            }
        }
    }
}

/// What one answer shows: each convention's evidence, the form of its tool-call ids and the
/// field that carried its reasoning.
type LineEvidence = (
    [Evidence; CONVENTIONS.len()],
    Option<&'static str>,
    Option<&'static str>,
);

/// One journal line's evidence (`None`: it cannot be read or rebuilt; such a line says nothing).
fn evidence_of_line(
    profile: &Profile,
    options: &ReconstructOptions,
    bytes: &[u8],
) -> Option<LineEvidence> {
    let record: Record = serde_json::from_slice(bytes).ok()?;
    let read = ReadRecord::of(&record).ok()?;
    let request = read.request.as_ref().ok()?;
    let answer = infer::Answer {
        profile,
        request,
        completion: &read.completion,
        options,
    };
    let form = infer::id_form(profile, &read.completion);
    let reasoning = record.response.as_ref().and_then(|response| {
        infer::reasoning_field(profile.family.spec().reasoning_close, response)
    });
    infer::evidence_of(&answer)
        .ok()
        .map(|e| (e, form, reasoning))
}

/// One group in `build.json`: who answered, the conventions adopted with their evidence, and
/// what became of its answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderReport {
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The endpoint's recorded server kind.
    pub server_kind: ServerKind,
    /// Successful records.
    pub answers: u64,
    /// Answers read for evidence (0 where the server was declared: nothing inferred).
    pub evidence_answers: u64,
    /// Conventions adopted, each rebuilt answer of the group rebuilt under them.
    pub conventions: Vec<ConventionReport>,
    /// The evidence answers with tool calls, by the form of their ids (`functions.NAME:N`,
    /// `NAME:N`, `N`, `other`: minted by the provider, the model's id not readable).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub call_id_forms: BTreeMap<String, u64>,
    /// The evidence answers with reasoning, by the field that carried it
    /// (`reconstruct/infer/reasoning.rs`: `reasoning`, `reasoning_content`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasoning_fields: BTreeMap<String, u64>,
    /// Conventions some answers showed but the rule did not adopt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_adopted: Vec<ConventionReport>,
    /// Samples written.
    pub samples: u64,
    /// Rows dropped by a policy (class, length).
    pub dropped: u64,
    /// Samples written, per fidelity class.
    pub per_fidelity_class: BTreeMap<String, u64>,
}

/// One convention and its evidence in a group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConventionReport {
    pub name: String,
    /// `"completion count = rebuilt − 1 in 12 of 12"`.
    pub evidence: String,
    pub tally: Tally,
}

/// What became of one group's rows (kept per group while building).
#[derive(Debug, Clone, Default)]
pub struct GroupCounts {
    pub samples: u64,
    pub dropped: u64,
    pub per_fidelity_class: BTreeMap<String, u64>,
}

impl Providers {
    /// The groups as `build.json` lists them, with their rows' `counts` (by group index).
    pub fn report(&self, counts: &[GroupCounts]) -> Vec<ProviderReport> {
        self.groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let c = counts.get(i).cloned().unwrap_or_default();
                let mut conventions = Vec::new();
                let mut not_adopted = Vec::new();
                for (index, convention) in CONVENTIONS.into_iter().enumerate() {
                    let tally = g.evidence.tallies[index];
                    if tally.differs() == 0 {
                        continue;
                    }
                    let report = ConventionReport {
                        name: convention.name().to_string(),
                        evidence: g.evidence.describe(index),
                        tally,
                    };
                    if g.adopted.iter().any(|a| a.name() == convention.name()) {
                        conventions.push(report);
                    } else {
                        not_adopted.push(report);
                    }
                }
                ProviderReport {
                    endpoint: g.endpoint.clone(),
                    provider: g.provider.clone(),
                    server_kind: g.options.kind,
                    answers: g.answers,
                    evidence_answers: g.evidence.evaluated,
                    conventions,
                    call_id_forms: g
                        .evidence
                        .id_forms
                        .iter()
                        .map(|(form, n)| (form.to_string(), *n))
                        .collect(),
                    reasoning_fields: g
                        .evidence
                        .reasoning_fields
                        .iter()
                        .map(|(field, n)| (field.to_string(), *n))
                        .collect(),
                    not_adopted,
                    samples: c.samples,
                    dropped: c.dropped,
                    per_fidelity_class: c.per_fidelity_class,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lines_group_is_read_from_its_small_fields() {
        let line = br#"{"id":"p","attempt":1,"status":"success","error":"x,\"request\":{}","endpoint":"or","provider":"Chutes","started_at":"t","latency_ms":1,"request":{"provider":"Other"},"response":{"provider":"Other"}}"#;
        let head = Head::of(line).expect("a head");
        assert_eq!(head.endpoint, "or");
        assert_eq!(head.provider.as_deref(), Some("Chutes"));
        assert_eq!(head.status, Status::Success);
        // No journaled provider: grouped by the endpoint alone, whatever the answer says.
        let line = br#"{"id":"q","attempt":1,"status":"failed","endpoint":"e","started_at":"t","latency_ms":1,"request":{},"response":{"provider":"Other"}}"#;
        let head = Head::of(line).expect("a head");
        assert_eq!((head.provider, head.status), (None, Status::Failed));
    }

    /// Python's `json.dumps` puts a space after each comma and colon: the same prefix is found
    /// (and a quoted `"request"` inside a string is still not a key).
    #[test]
    fn the_request_key_is_found_with_spaces_around_it() {
        let line = br#"{"id": "p", "error": "a, \"request\": b", "endpoint": "or", "provider": "Chutes", "status": "success", "request" : {"provider": "Other"}}"#;
        let at = request_key(line).expect("the key");
        assert!(line[at..].starts_with(br#", "request" :"#));
        let head = Head::of(line).expect("a head");
        assert_eq!(
            (head.endpoint.as_str(), head.provider.as_deref()),
            ("or", Some("Chutes"))
        );
        assert_eq!(request_key(br#"{"request": {}}"#), None);
        assert_eq!(request_key(br#"{"a": "\"request\": x"}"#), None);
    }
}
