//! Replacing a file's contents all at once: the bytes go to a temporary file in the same
//! directory, which is then renamed over the target, so a reader (or a crash) never sees a
//! half-written file. An existing file keeps its permissions; a symbolic link keeps
//! pointing where it did and its target is the file replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Write `bytes` to `path`, creating missing parent directories. Returns whether the file
/// is new.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let target = follow_link(path);
    // Only a regular file is replaced: a FIFO, socket or device at the path stays.
    let existing = match super::regular::check(&target) {
        Ok(existing) => existing,
        Err(super::regular::OpenError::Directory) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "it is a directory",
            ));
        }
        Err(super::regular::OpenError::NotRegular(kind)) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("it is {kind}, not a regular file"),
            ));
        }
        Err(super::regular::OpenError::NotFound) => None,
        Err(super::regular::OpenError::Io(e)) => return Err(e),
    };
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    // A new file gets the usual mode (0666 less the umask), not a temp file's 0600.
    let mut temp = tempfile::Builder::new()
        .prefix(".agent-write-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Some(metadata) = &existing {
        temp.as_file().set_permissions(metadata.permissions())?;
    }
    temp.persist(&target).map_err(|e| e.error)?;
    Ok(existing.is_none())
}

/// The file a symbolic link points to (resolved as far as it exists), or `path` itself.
fn follow_link(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => super::path::real_path(path),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_parents_and_keeps_permissions_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b/c.txt");
        assert!(write(&nested, b"one").unwrap());
        assert_eq!(std::fs::read(&nested).unwrap(), b"one");

        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        assert!(!write(&script, b"new").unwrap());
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o751);

        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&nested, &link).unwrap();
        write(&link, b"through the link").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&nested).unwrap(), b"through the link");

        assert!(write(dir.path(), b"x").is_err());
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let error = write(&dir.path().join("pipe"), b"x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "it is a FIFO (named pipe), not a regular file"
        );
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::symlink_metadata(dir.path().join("pipe"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-write-"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn new_files_get_the_usual_mode_not_a_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let umask = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Umask:"))
                    .and_then(|l| u32::from_str_radix(l.split_whitespace().nth(1)?, 8).ok())
            })
            .unwrap_or(0o022);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.html");
        assert!(write(&path, b"<p>hi</p>").unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask);
    }
}
