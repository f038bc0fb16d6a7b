//! The tool-call audit (issue 11 item 2): STUB with the agreed API (tasks/INTERFACE-verify.md).
//! Helper `audit` replaces this whole file; `verify` only calls the functions below.

use std::path::Path;

use crate::model::Profile;

pub struct AuditOptions<'a> {
    /// A second run on the same prompts (another provider or the official API): trigger F1 and
    /// schema accuracy as K2-Vendor-Verifier defines them.
    pub reference_run: Option<&'a Path>,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ToolAudit {}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// Reads the run directory's journal (latest successful attempt per id) and manifest.
pub fn audit_run(
    _run_dir: &Path,
    _profile: &Profile,
    _opts: &AuditOptions,
) -> Result<ToolAudit, AuditError> {
    Ok(ToolAudit::default())
}

impl ToolAudit {
    /// One line per problem a user must see in red. Empty when none.
    pub fn red_flags(&self) -> Vec<String> {
        Vec::new()
    }

    /// Plain-text table for the terminal (per dataset, per provider).
    pub fn terminal_table(&self) -> String {
        String::new()
    }

    /// A self-contained HTML fragment (a <section>) that `report.html` embeds.
    pub fn html_section(&self) -> String {
        String::new()
    }
}
