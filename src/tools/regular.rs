//! Only regular files are read or replaced by the tools. A FIFO blocks its reader until a
//! writer comes (forever, and the blocked thread cannot be taken back), a terminal steals
//! the user's keys, `/dev/zero` never ends: such paths are refused before they are opened.
//! `open` closes the race between that check and the open: it opens without blocking and
//! checks the opened file again.

use std::fs::{File, Metadata};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a path cannot be used as a file.
#[derive(Debug)]
pub enum OpenError {
    /// It does not exist.
    NotFound,
    /// It is a directory.
    Directory,
    /// It exists but is no regular file: what it is ("a FIFO (named pipe)", ...).
    NotRegular(&'static str),
    /// Any other failure.
    Io(std::io::Error),
}

impl From<std::io::Error> for OpenError {
    fn from(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::NotFound {
            OpenError::NotFound
        } else {
            OpenError::Io(error)
        }
    }
}

/// What a file that is not regular is, for messages; `None` for a regular file.
pub fn irregular_kind(metadata: &Metadata) -> Option<&'static str> {
    let kind = metadata.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Check `path` (symbolic links followed) without opening it: `Ok(None)` when it does not
/// exist, `Ok(Some(metadata))` for a regular file, an error for anything else.
pub fn check(path: &Path) -> Result<Option<Metadata>, OpenError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OpenError::Io(e)),
    };
    match irregular_kind(&metadata) {
        None => Ok(Some(metadata)),
        Some(_) if metadata.is_dir() => Err(OpenError::Directory),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

/// Open a regular file for reading, refusing anything else before it is opened, and
/// checking again what was opened (without blocking: a FIFO swapped in after the check
/// does not hang the open).
pub fn open(path: &Path) -> Result<(File, Metadata), OpenError> {
    if check(path)?.is_none() {
        return Err(OpenError::NotFound);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let metadata = file.metadata()?;
    match irregular_kind(&metadata) {
        None => Ok((file, metadata)),
        Some(_) if metadata.is_dir() => Err(OpenError::Directory),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn make_fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn only_regular_files_open() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        make_fifo(&fifo);
        assert!(matches!(open(&fifo), Err(OpenError::NotRegular(kind)) if kind.contains("FIFO")));
        std::os::unix::fs::symlink(&fifo, dir.path().join("link")).unwrap();
        assert!(matches!(
            open(&dir.path().join("link")),
            Err(OpenError::NotRegular(_))
        ));
        assert!(matches!(
            open(Path::new("/dev/null")),
            Err(OpenError::NotRegular("a device"))
        ));
        assert!(matches!(open(dir.path()), Err(OpenError::Directory)));
        assert!(matches!(
            open(&dir.path().join("missing")),
            Err(OpenError::NotFound)
        ));
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let (_, metadata) = open(&dir.path().join("file")).unwrap();
        assert_eq!(metadata.len(), 1);
        assert!(check(&dir.path().join("missing")).unwrap().is_none());
    }
}
