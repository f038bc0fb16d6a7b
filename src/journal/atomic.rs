//! Atomic file replacement (temp file + fsync + rename + fsync of the directory), for the manifest and summary.
//!
//! A reader sees either the old file or the new one, never a half-written file, even after a power loss.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use super::JournalError;

/// Replace `path` with `bytes` atomically.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp"));
    {
        let mut file = File::create(&tmp).map_err(JournalError::io(&tmp))?;
        file.write_all(bytes).map_err(JournalError::io(&tmp))?;
        file.sync_all().map_err(JournalError::io(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(JournalError::io(path))?;
    sync_dir(dir)
}

/// Make a directory's entries (created, renamed files) durable.
pub fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    // Opening a directory read-only and fsyncing it is how POSIX makes renames durable;
    // on platforms where this is not possible, the rename is still atomic.
    match File::open(dir) {
        Ok(d) => match d.sync_all() {
            Ok(()) => Ok(()),
            Err(e) if cfg!(windows) => {
                let _ = e;
                Ok(())
            }
            Err(e) => Err(JournalError::io(dir)(e)),
        },
        Err(e) if cfg!(windows) => {
            let _ = e;
            Ok(())
        }
        Err(e) => Err(JournalError::io(dir)(e)),
    }
}
