//! Checkpoints of real working trees (temporary directories holding a real git
//! repository): a shell command that creates, modifies, deletes, renames and chmods files
//! is undone exactly; the repository's `.git` (index, refs, status) is never touched;
//! ignored files stay as they are; what is over a cap is reported; changes made outside
//! the agent are not overwritten unless forced; a restore can be undone; and a restore
//! killed with SIGKILL leaves every file whole (old or new content, never torn).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use agent::checkpoint::{
    CheckpointError, Checkpoints, Moment, RestoreRequest, RewindNote, Settings,
};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sh(cwd: &Path, script: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with a commit, some untracked files and an ignored one.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sh(
        dir.path(),
        "git init -q . && git config user.email t@t && git config user.name t \
         && mkdir -p src/deep docs && printf 'fn main() {}\\n' > src/main.rs \
         && printf 'one\\n' > src/deep/a.txt && printf 'doc\\n' > docs/guide.md \
         && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh \
         && printf 'target/\\n*.log\\n' > .gitignore && ln -s src/main.rs link.rs \
         && git add -A && git commit -qm init \
         && printf 'untracked\\n' > notes.txt && mkdir target && printf 'build\\n' > target/out.bin \
         && printf 'log\\n' > app.log && git add notes.txt",
    );
    dir
}

/// Every path under `dir` except `.git`: its kind, mode and content.
fn state(dir: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(
                    relative,
                    (
                        "link".into(),
                        0,
                        target.to_string_lossy().as_bytes().to_vec(),
                    ),
                );
            } else if meta.is_dir() {
                out.insert(relative, ("dir".into(), mode, Vec::new()));
                pending.push(path);
            } else {
                out.insert(
                    relative,
                    ("file".into(), mode, std::fs::read(&path).unwrap()),
                );
            }
        }
    }
    out
}

/// What git knows: status, the index file's bytes, every ref and HEAD.
fn git_state(dir: &Path) -> (String, Vec<u8>, String, Vec<u8>) {
    let status = sh(dir, "git status --porcelain --untracked-files=all");
    (
        status,
        std::fs::read(dir.join(".git/index")).unwrap(),
        sh(dir, "git show-ref; git stash list"),
        std::fs::read(dir.join(".git/HEAD")).unwrap(),
    )
}

/// Git's own files, read without running git (which may refresh the index).
fn git_files(dir: &Path) -> (Vec<u8>, String, Vec<u8>) {
    (
        std::fs::read(dir.join(".git/index")).unwrap(),
        sh(dir, "find .git/refs -type f | sort | xargs cat"),
        std::fs::read(dir.join(".git/HEAD")).unwrap(),
    )
}

fn open(home: &Path, cwd: &Path, settings: &Settings) -> Checkpoints {
    Checkpoints::open(&home.join("checkpoints"), cwd, settings, Vec::new(), "s1")
}

fn restore_to(
    checkpoints: &Checkpoints,
    target: &str,
    force: bool,
) -> Result<agent::checkpoint::Summary, CheckpointError> {
    checkpoints.restore(RestoreRequest {
        target,
        force,
        entry_id: None,
        note: RewindNote {
            target: Some(target.to_string()),
            head_before: None,
        },
    })
}

#[test]
fn a_shell_command_is_undone_exactly_and_git_is_never_touched() {
    let repo = repository();
    let home = tempfile::tempdir().unwrap();
    let cwd = repo.path();
    let git_before = git_state(cwd);
    let files_before = git_files(cwd);
    let before = state(cwd);
    let checkpoints = open(home.path(), cwd, &Settings::default());
    let checkpoint = checkpoints
        .take(Moment::Before, Some("e1"), Some("call-1"))
        .unwrap();
    assert!(checkpoint.complete);
    // src/main.rs, src/deep/a.txt, docs/guide.md, run.sh, .gitignore, link.rs, notes.txt
    assert_eq!(checkpoint.files, 7, "{checkpoint:?}");
    assert!(checkpoint.skipped.is_empty(), "{:?}", checkpoint.skipped);

    sh(
        cwd,
        "printf 'changed\\n' > src/main.rs && rm docs/guide.md && rmdir docs \
         && mv src/deep/a.txt src/b.txt && chmod 600 run.sh && mkdir -p new/dir \
         && printf 'new\\n' > new/dir/file.txt && printf 'more\\n' >> notes.txt \
         && rm link.rs && ln -s notes.txt link.rs && printf 'log2\\n' > app.log \
         && printf 'build2\\n' > target/out.bin",
    );
    checkpoints
        .take(Moment::After, Some("e1"), Some("call-1"))
        .unwrap();
    let ignored_after_command = (
        std::fs::read(cwd.join("app.log")).unwrap(),
        std::fs::read(cwd.join("target/out.bin")).unwrap(),
    );

    let summary = restore_to(&checkpoints, &checkpoint.id, false).unwrap();
    assert_eq!(
        summary.removed,
        ["new/", "new/dir/", "new/dir/file.txt", "src/b.txt"],
        "{summary:?}"
    );
    assert!(
        summary.restored.contains(&"docs/guide.md".to_string()),
        "{summary:?}"
    );
    assert!(
        summary.restored.contains(&"run.sh".to_string()),
        "{summary:?}"
    );
    assert!(summary.not_restored.is_empty(), "{summary:?}");

    let mut after = state(cwd);
    // Ignored files are left exactly as the command left them.
    assert_eq!(
        (
            std::fs::read(cwd.join("app.log")).unwrap(),
            std::fs::read(cwd.join("target/out.bin")).unwrap()
        ),
        ignored_after_command
    );
    for ignored in ["app.log", "target/out.bin"] {
        after.insert(ignored.into(), before[Path::new(ignored)].clone());
    }
    assert_eq!(after, before);
    assert_eq!(git_files(cwd), files_before, "git's own files were touched");
    assert_eq!(git_state(cwd).0, git_before.0);
    assert_eq!(git_state(cwd).2, git_before.2);
}

#[test]
fn a_restore_can_be_undone_and_outside_changes_are_not_overwritten_unless_forced() {
    let repo = repository();
    let home = tempfile::tempdir().unwrap();
    let cwd = repo.path();
    let checkpoints = open(home.path(), cwd, &Settings::default());
    let first = checkpoints
        .take(Moment::Before, Some("e1"), Some("c1"))
        .unwrap();
    sh(
        cwd,
        "printf 'agent\\n' > notes.txt && printf 'x\\n' > made.txt",
    );
    checkpoints
        .take(Moment::After, Some("e1"), Some("c1"))
        .unwrap();
    let agent_state = state(cwd);

    // The user edits a file the agent also changed: restoring would lose that edit.
    sh(cwd, "printf 'user edit\\n' > notes.txt");
    let refused = restore_to(&checkpoints, &first.id, false).unwrap_err();
    match &refused {
        CheckpointError::ChangedOutside(paths) => assert_eq!(paths, &["notes.txt"]),
        other => panic!("{other:?}"),
    }
    assert!(
        refused.to_string().contains("nothing was changed"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "user edit\n"
    );
    assert!(
        cwd.join("made.txt").exists(),
        "a refused restore changed nothing"
    );

    // Forced, it restores; then undoing the rewind brings the user's edit back.
    let summary = restore_to(&checkpoints, &first.id, true).unwrap();
    assert_eq!(summary.describe(), "1 restored, 1 removed");
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "untracked\n"
    );
    let undo = checkpoints.last_undo().unwrap();
    restore_to(&checkpoints, &undo.id, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "user edit\n"
    );
    let mut expected = agent_state;
    expected.get_mut(Path::new("notes.txt")).unwrap().2 = b"user edit\n".to_vec();
    assert_eq!(state(cwd), expected);
}

#[test]
fn files_over_the_caps_are_reported_and_left_alone() {
    let repo = repository();
    let home = tempfile::tempdir().unwrap();
    let cwd = repo.path();
    std::fs::write(cwd.join("big.bin"), vec![1u8; 2048]).unwrap();
    let settings = Settings {
        max_file_bytes: 1024,
        ..Settings::default()
    };
    let checkpoints = open(home.path(), cwd, &settings);
    let checkpoint = checkpoints
        .take(Moment::Before, Some("e"), Some("c"))
        .unwrap();
    assert_eq!(checkpoint.skipped.len(), 1, "{:?}", checkpoint.skipped);
    assert_eq!(checkpoint.skipped[0].path, "big.bin");
    assert!(
        checkpoint.skipped[0]
            .reason
            .contains("over max_file_bytes (1024)"),
        "{:?}",
        checkpoint.skipped
    );
    std::fs::write(cwd.join("big.bin"), vec![2u8; 4096]).unwrap();
    std::fs::write(cwd.join("src/main.rs"), "changed").unwrap();
    let summary = restore_to(&checkpoints, &checkpoint.id, true).unwrap();
    assert_eq!(summary.restored, ["src/main.rs"]);
    assert_eq!(summary.not_restored.len(), 1, "{summary:?}");
    assert_eq!(summary.not_restored[0].path, "big.bin");
    assert_eq!(std::fs::read(cwd.join("big.bin")).unwrap(), vec![2u8; 4096]);

    // Past max_files the walk stops, says so, and a restore removes nothing it cannot know.
    let few = Settings {
        max_files: 3,
        ..Settings::default()
    };
    let home = tempfile::tempdir().unwrap();
    let checkpoints = open(home.path(), cwd, &few);
    let partial = checkpoints
        .take(Moment::Before, Some("e"), Some("c"))
        .unwrap();
    assert!(!partial.complete);
    assert_eq!(partial.files, 3);
    assert!(
        partial
            .skipped
            .iter()
            .any(|s| s.reason.contains("reached max_files (3)")),
        "{:?}",
        partial.skipped
    );
    std::fs::write(cwd.join("zzz-created.txt"), "new").unwrap();
    let summary = restore_to(&checkpoints, &partial.id, true).unwrap();
    assert!(summary.removed.is_empty(), "{summary:?}");
    assert!(cwd.join("zzz-created.txt").exists());
}

#[test]
fn unchanged_files_are_not_read_again() {
    let repo = repository();
    let home = tempfile::tempdir().unwrap();
    let cwd = repo.path();
    let checkpoints = open(home.path(), cwd, &Settings::default());
    let first = checkpoints.take(Moment::Before, None, None).unwrap();
    assert_eq!(first.new_bytes, first.bytes);
    let second = checkpoints.take(Moment::Before, None, None).unwrap();
    assert_eq!((second.new_bytes, &second.root), (0, &first.root));

    // Same size, modification time and inode: taken as unchanged, not read.
    sh(
        cwd,
        "printf 'UNTRACKED\\n' > notes.txt.new && touch -r notes.txt notes.txt.new \
             && cat notes.txt.new > notes.txt && touch -r notes.txt.new notes.txt && rm notes.txt.new",
    );
    let third = checkpoints.take(Moment::Before, None, None).unwrap();
    assert_eq!((third.new_bytes, &third.root), (0, &first.root));
    // One file really changed: only it is read.
    std::fs::write(cwd.join("src/main.rs"), "fn main() { changed() }\n").unwrap();
    let fourth = checkpoints.take(Moment::Before, None, None).unwrap();
    assert_eq!(fourth.new_bytes, 24);
    // A new process reuses the last record on disk too.
    let again = open(home.path(), cwd, &Settings::default());
    let fifth = again.take(Moment::Before, None, None).unwrap();
    assert_eq!((fifth.new_bytes, &fifth.root), (0, &fourth.root));
    assert_eq!(again.records().len(), 5);
}

#[test]
fn sigkill_during_a_restore_leaves_every_file_old_or_new_never_torn() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path();
    let old = |i: usize| vec![b'o'; 200_000 + i];
    let new = |i: usize| vec![b'n'; 300_000 + i];
    const FILES: usize = 150;
    for i in 0..FILES {
        std::fs::write(cwd.join(format!("f{i:03}")), old(i)).unwrap();
    }
    let checkpoints = open(home.path(), cwd, &Settings::default());
    let target = checkpoints.take(Moment::Before, None, Some("c")).unwrap();
    for i in 0..FILES {
        std::fs::write(cwd.join(format!("f{i:03}")), new(i)).unwrap();
    }
    checkpoints.take(Moment::After, None, Some("c")).unwrap();
    drop(checkpoints);

    let mut child = Command::new(crate::support::fixtures::program("test_checkpoint_restore"))
        .env(
            "CHECKPOINT_RESTORE",
            format!(
                "{}\n{}\n{}",
                home.path().display(),
                cwd.display(),
                target.id
            ),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it as soon as the restore has begun writing files.
    let started = loop {
        let begun = std::fs::read_dir(cwd).unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(".agent-restore-")
                || std::fs::metadata(e.path()).is_ok_and(|m| m.len() < 300_000)
        });
        if begun {
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::yield_now();
    };
    let _ = child.kill();
    child.wait().unwrap();
    let mut restored = 0;
    for i in 0..FILES {
        let bytes = std::fs::read(cwd.join(format!("f{i:03}"))).unwrap();
        if bytes == old(i) {
            restored += 1;
        } else {
            assert_eq!(bytes, new(i), "f{i:03} is torn ({} bytes)", bytes.len());
        }
    }
    assert!(started, "the restore finished before it could be killed");
    assert!(restored < FILES || !started, "killed after it finished");
}
