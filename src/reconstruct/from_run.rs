//! The reconstruction options a run's own record asks for: what its manifest says about each
//! endpoint's server ([`ServerRecord`]) turned into [`ReconstructOptions`], so that everything
//! downstream of a run reads the shape back instead of asking the user again.

use crate::journal::{Manifest, ServerRecord};

use super::ReconstructOptions;

impl ReconstructOptions {
    /// How to reconstruct this run's answers. A manifest from before servers were recorded gives
    /// the defaults. With several endpoints the first one's shape is used (the options are per
    /// run); [`ReconstructOptions::mixed_in_run`] says when that loses something.
    pub fn for_run(manifest: &Manifest) -> ReconstructOptions {
        match manifest.servers.first() {
            Some(server) => ReconstructOptions::for_server(server),
            None => ReconstructOptions::default(),
        }
    }

    /// Whether the run's endpoints shape text differently (one [`ReconstructOptions`] cannot fit
    /// all).
    pub fn mixed_in_run(manifest: &Manifest) -> bool {
        manifest
            .servers
            .windows(2)
            .any(|w| ReconstructOptions::for_server(&w[0]) != ReconstructOptions::for_server(&w[1]))
    }

    /// The options for one endpoint's recorded server.
    // `..default()` keeps this compiling as `ReconstructOptions` grows; each new field that a
    // `ServerRecord` knows belongs here.
    #[allow(clippy::needless_update)]
    pub fn for_server(server: &ServerRecord) -> ReconstructOptions {
        // All of the record: without the kind and version, `build` checked every answer against
        // the generic shape (tests/replay_e2e.rs: vLLM cuts classed `unique`, wrong).
        ReconstructOptions {
            spaces_around_special_tokens: server.spaces_around_special_tokens,
            kind: server.kind,
            server_version: server.version.clone(),
            ..ReconstructOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ServerKind;
    use crate::journal::sample_manifest as manifest;

    #[test]
    fn reconstruct_options_come_from_the_recorded_server() {
        let old = manifest(0.6);
        assert_eq!(
            ReconstructOptions::for_run(&old),
            ReconstructOptions::default()
        );
        let record = |name: &str, spaces| ServerRecord {
            endpoint: name.into(),
            kind: ServerKind::Vllm,
            version: Some("0.11.0".into()),
            spaces_around_special_tokens: spaces,
        };
        let one = manifest(0.6).with_servers(vec![record("a", true)]);
        assert!(ReconstructOptions::for_run(&one).spaces_around_special_tokens);
        assert_eq!(ReconstructOptions::for_run(&one).kind, ServerKind::Vllm);
        assert_eq!(
            ReconstructOptions::for_run(&one).server_version.as_deref(),
            Some("0.11.0")
        );
        assert!(!ReconstructOptions::mixed_in_run(&one));
        let two = manifest(0.6).with_servers(vec![record("a", true), record("b", false)]);
        assert!(ReconstructOptions::mixed_in_run(&two));
    }
}
