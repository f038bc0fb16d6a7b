//! [`RunLock`]: one writer per run directory.
//!
//! Two processes appending to one journal would interleave attempt numbers, double-spend the
//! budget and race the torn-tail repair, so whoever opens a run to append holds an exclusive
//! `flock(2)` on `run/lock` for as long as its [`super::Journal`] lives. The lock file holds the
//! holder's PID (for the refusal message only: the kernel lock is what excludes, and it goes away
//! with the process however it ends, so a stale PID in the file never blocks anyone). The file is
//! never deleted: unlinking a lock file lets a third process lock a new inode while the second
//! still holds the old one.
//!
//! `flock` through `libc` (already a dependency) rather than `fs4`/`fd-lock`: the whole job is one
//! call and one error code.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::JournalError;

/// File name of the lock inside a run directory.
pub const LOCK_FILE: &str = "lock";

/// An exclusive lock on a run directory, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    path: PathBuf,
}

impl RunLock {
    /// Lock the run at `root` (which must exist) or refuse, naming the holder's PID.
    pub fn acquire(root: &Path) -> Result<RunLock, JournalError> {
        let path = root.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(JournalError::io(&path))?;
        if let Err(e) = try_lock_exclusive(&file) {
            if e.kind() == io::ErrorKind::WouldBlock {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(JournalError::Locked {
                    path,
                    pid: text.trim().parse().ok(),
                });
            }
            return Err(JournalError::io(&path)(e));
        }
        let write_pid = |file: &mut File| -> io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "{}", std::process::id())?;
            file.flush()
        };
        write_pid(&mut file).map_err(JournalError::io(&path))?;
        Ok(RunLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(unix)]
fn try_lock_exclusive(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: `flock` on a file descriptor this `File` owns and keeps open.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(not(unix))]
fn try_lock_exclusive(file: &File) -> io::Result<()> {
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::WouldBlock => io::ErrorKind::WouldBlock.into(),
        std::fs::TryLockError::Error(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        // flock excludes across open file descriptions, so this holds within one process too.
        let err = RunLock::acquire(dir.path()).unwrap_err();
        match &err {
            JournalError::Locked { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains(&std::process::id().to_string()));
        drop(first);
        RunLock::acquire(dir.path()).unwrap();
    }
}
