//! [`RunDir`]: create or reopen a run directory — manifest check, torn-tail repair, resume index,
//! and a [`Journal`] positioned to append.

use std::fs;
use std::path::{Path, PathBuf};

use super::atomic::{atomic_write, sync_dir};
use super::index::build_index;
use super::segment::{list_segments, JOURNAL_DIR};
use super::writer::JournalOptions;
use super::{Journal, JournalError, Manifest, RecordReader, ResumeState, RunLock, Summary};

/// File name of the manifest inside a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// File name of the summary inside a run directory.
pub const SUMMARY_FILE: &str = "summary.json";

/// A run directory on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.root.join(MANIFEST_FILE)
    }

    pub fn journal_dir(&self) -> PathBuf {
        self.root.join(JOURNAL_DIR)
    }

    pub fn summary_path(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    /// Start a new run at `path`, or resume the one there, with default [`JournalOptions`].
    ///
    /// The returned journal holds the run's [`RunLock`]: while it lives, any other
    /// `create_or_open` of the same directory (in this process or another) fails with
    /// [`JournalError::Locked`] naming this process's PID.
    /// - New directory: `manifest` is written atomically and an empty journal created.
    /// - Existing run: its manifest must have the same fingerprint; otherwise
    ///   [`JournalError::SettingsChanged`] lists what changed — unless `force`, in which case the
    ///   new manifest is recorded (keeping the old fingerprint in `previous_fingerprints`) and the
    ///   journal kept. A torn last line is truncated away and reported in
    ///   [`ResumeState::report`], as are corrupt lines elsewhere.
    pub fn create_or_open(
        path: impl AsRef<Path>,
        manifest: &Manifest,
        force: bool,
    ) -> Result<(Journal, ResumeState), JournalError> {
        Self::create_or_open_with(path, manifest, force, JournalOptions::default())
    }

    /// [`RunDir::create_or_open`] with explicit segment size and fsync batching.
    pub fn create_or_open_with(
        path: impl AsRef<Path>,
        manifest: &Manifest,
        force: bool,
        options: JournalOptions,
    ) -> Result<(Journal, ResumeState), JournalError> {
        let run = RunDir::new(path.as_ref());
        let mut manifest = manifest.clone();
        manifest.seal();
        fs::create_dir_all(run.journal_dir()).map_err(JournalError::io(run.journal_dir()))?;
        // Before anything is read or repaired: a second writer must not cut the first's tail.
        let lock = RunLock::acquire(run.root())?;

        match run.read_manifest()? {
            None => run.start_manifest(&manifest, force)?,
            // Recomputed, not the stored fingerprint: a manifest sealed by an older draftgen
            // (which hashed keys that are no longer settings) still matches the same settings.
            Some(old) if old.compute_fingerprint() == manifest.fingerprint => {
                run.refresh_manifest(&old, &manifest)?
            }
            Some(old) => run.replace_manifest(&old, manifest, force)?,
        }

        let state = build_index(&run.journal_dir(), true)?;
        let last = list_segments(&run.journal_dir())?
            .last()
            .map_or(1, |s| s.number);
        let mut journal = Journal::open_segment(&run.journal_dir(), last, options)?;
        journal.hold(lock);
        sync_dir(&run.journal_dir())?;
        Ok((journal, state))
    }

    /// A run without a manifest gets `manifest`; a journal without its manifest cannot be
    /// checked against the settings, so one with records is refused unless `force`.
    fn start_manifest(&self, manifest: &Manifest, force: bool) -> Result<(), JournalError> {
        let has_records = list_segments(&self.journal_dir())?
            .iter()
            .any(|s| fs::metadata(&s.path).is_ok_and(|m| m.len() > 0));
        if has_records && !force {
            return Err(JournalError::MissingManifest {
                path: self.manifest_path(),
            });
        }
        self.write_manifest(manifest)
    }

    /// Same settings as `old`: what the run knows about its servers (recorded since, or a new
    /// version) and where its prompts were read from are kept current; nothing else changes.
    fn refresh_manifest(&self, old: &Manifest, manifest: &Manifest) -> Result<(), JournalError> {
        if old.draftgen_version != manifest.draftgen_version {
            tracing::warn!(
                "{}: run started with draftgen {}, resuming with {}",
                self.manifest_path().display(),
                old.draftgen_version,
                manifest.draftgen_version
            );
        }
        let new_prompts = manifest.prompts.is_some() && old.prompts != manifest.prompts;
        if old.servers == manifest.servers && !new_prompts {
            return Ok(());
        }
        if !old.servers.is_empty() && old.servers != manifest.servers {
            tracing::warn!(
                "{}: the endpoints' server shape changed (e.g. --server-version); records written before keep no note of the old one",
                self.manifest_path().display(),
            );
        }
        let mut updated = old.clone();
        updated.servers = manifest.servers.clone();
        if new_prompts {
            // Where the prompts were read from this time (a resume may move them).
            updated.prompts = manifest.prompts.clone();
        }
        updated.request_options = manifest.request_options.clone();
        updated.seal();
        self.write_manifest(&updated)
    }

    /// Other settings than `old`'s: refused with what changed, unless `force` (then `manifest`
    /// replaces it, remembering the old fingerprints).
    fn replace_manifest(
        &self,
        old: &Manifest,
        mut manifest: Manifest,
        force: bool,
    ) -> Result<(), JournalError> {
        let mut changes = manifest.changes_from(old);
        if changes.is_empty() {
            // Same settings but a fingerprint from another algorithm or a hand edit.
            changes.push(format!(
                "fingerprint: {} → {}",
                old.fingerprint, manifest.fingerprint
            ));
        }
        if !force {
            return Err(JournalError::SettingsChanged {
                path: self.manifest_path(),
                changes,
            });
        }
        tracing::warn!(
            "{}: settings changed, continuing because force is set (--force or `force = true` in the config):\n  {}",
            self.manifest_path().display(),
            changes.join("\n  ")
        );
        manifest.previous_fingerprints = old.previous_fingerprints.clone();
        manifest.previous_fingerprints.push(old.fingerprint.clone());
        self.write_manifest(&manifest)
    }

    /// Index an existing run without modifying it (for `build`, `verify`, reports): a torn tail is
    /// reported, not truncated.
    pub fn read_state(&self) -> Result<ResumeState, JournalError> {
        build_index(&self.journal_dir(), false)
    }

    /// Every record, in journal order, without modifying the journal.
    pub fn records(&self) -> Result<RecordReader, JournalError> {
        RecordReader::open(&self.journal_dir())
    }

    /// The manifest, if the directory has one.
    pub fn read_manifest(&self) -> Result<Option<Manifest>, JournalError> {
        let path = self.manifest_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(JournalError::io(&path)(e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| JournalError::BadManifest { path, source })
    }

    fn write_manifest(&self, manifest: &Manifest) -> Result<(), JournalError> {
        let mut bytes =
            serde_json::to_vec_pretty(manifest).map_err(|source| JournalError::BadManifest {
                path: self.manifest_path(),
                source,
            })?;
        bytes.push(b'\n');
        atomic_write(&self.manifest_path(), &bytes)
    }

    /// The `summary.json` an earlier session wrote, if there is a readable one (an unreadable
    /// one is only a lost history of sessions, not a reason to stop: warned and ignored).
    pub fn read_summary(&self) -> Option<Summary> {
        let path = self.summary_path();
        let bytes = std::fs::read(&path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(summary) => Some(summary),
            Err(e) => {
                tracing::warn!(
                    "{}: cannot read the previous summary ({e}); its sessions are not carried over",
                    path.display()
                );
                None
            }
        }
    }

    /// Write `summary.json` atomically.
    pub fn write_summary(&self, summary: &Summary) -> Result<(), JournalError> {
        summary.write_to(&self.summary_path())
    }
}
