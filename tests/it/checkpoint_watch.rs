//! Checkpoints that read only the directories the kernel says changed: after every kind of
//! change — a file written, created, removed, renamed or chmod'ed, a link made, a
//! directory made, removed, replaced or moved, an ignore file edited, a file over the cap
//! — the recorded tree is exactly the one a full walk records, and a change in one
//! directory reads that directory alone. Changes made by a shell command count the same.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly
#![cfg(target_os = "linux")]

use agent::checkpoint::{
    Checkpoints, Moment, Record, RestoreRequest, RewindNote, ScanStats, Settings,
};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Watching from the first walk on, whatever the walks cost (by default a small tree is
/// watched only once walking it has cost what releasing the watches will).
fn settings() -> Settings {
    Settings {
        max_file_bytes: 1000,
        watch_after_walking: std::time::Duration::ZERO,
        ..Settings::default()
    }
}

fn open(home: &Path, cwd: &Path) -> Checkpoints {
    Checkpoints::open(&home.join("checkpoints"), cwd, &settings(), Vec::new(), "s")
}

fn take(checkpoints: &Checkpoints) -> Record {
    checkpoints.take(Moment::Before, None, None).unwrap()
}

/// What a walk of `cwd` records, by a checkpointer that never saw it before.
fn walked(cwd: &Path) -> Record {
    let home = tempfile::tempdir().unwrap();
    let fresh = open(home.path(), cwd);
    let record = take(&fresh);
    assert!(fresh.last_scan().walked);
    record
}

fn assert_same(watched: &Record, cwd: &Path, what: &str) {
    let reference = walked(cwd);
    assert_eq!(
        (
            &watched.root,
            watched.files,
            watched.bytes,
            &watched.skipped
        ),
        (
            &reference.root,
            reference.files,
            reference.bytes,
            &reference.skipped
        ),
        "after {what}: the watched checkpoint differs from a walk"
    );
}

/// A change made to the working tree.
type Change = Box<dyn Fn(&Path)>;

fn sh(cwd: &Path, script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// A tree of `dirs` directories of ten files, and a checkpointer past its first two walks.
fn watched_tree(dirs: usize) -> (tempfile::TempDir, tempfile::TempDir, Checkpoints) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for dir in 0..dirs {
        let path = work.path().join(format!("d{dir}"));
        std::fs::create_dir(&path).unwrap();
        for file in 0..10 {
            std::fs::write(path.join(format!("f{file}")), format!("{dir}/{file}\n")).unwrap();
        }
    }
    let checkpoints = open(home.path(), work.path());
    take(&checkpoints);
    assert!(checkpoints.last_scan().walked, "the first checkpoint walks");
    take(&checkpoints);
    assert!(
        checkpoints.last_scan().walked,
        "the second walks too: the watches came after the first walk read the tree"
    );
    take(&checkpoints);
    assert_eq!(
        checkpoints.last_scan(),
        ScanStats {
            walked: false,
            dirs_listed: 0,
            bytes_read: 0
        },
        "nothing changed: nothing is read"
    );
    (home, work, checkpoints)
}

#[test]
fn a_change_in_one_directory_reads_that_directory_alone() {
    let (_home, work, checkpoints) = watched_tree(20);
    std::fs::write(work.path().join("d7/f3"), "changed content\n").unwrap();
    let record = take(&checkpoints);
    assert_eq!(
        checkpoints.last_scan(),
        ScanStats {
            walked: false,
            dirs_listed: 1,
            bytes_read: 16
        }
    );
    assert_eq!(record.files, 200);
    assert_same(&record, work.path(), "one file written");
}

#[test]
fn every_kind_of_change_records_the_tree_a_walk_records() {
    let (_home, work, checkpoints) = watched_tree(5);
    let cwd = work.path();
    let changes: Vec<(&str, Change)> = vec![
        (
            "a file created",
            Box::new(|c| std::fs::write(c.join("d0/new"), "new").unwrap()),
        ),
        (
            "a file removed",
            Box::new(|c| std::fs::remove_file(c.join("d1/f0")).unwrap()),
        ),
        (
            "a file renamed into another directory",
            Box::new(|c| std::fs::rename(c.join("d1/f1"), c.join("d2/moved")).unwrap()),
        ),
        (
            "a file chmod'ed",
            Box::new(|c| {
                std::fs::set_permissions(c.join("d2/f2"), std::fs::Permissions::from_mode(0o755))
                    .unwrap()
            }),
        ),
        (
            "a directory chmod'ed",
            Box::new(|c| {
                std::fs::set_permissions(c.join("d3"), std::fs::Permissions::from_mode(0o700))
                    .unwrap()
            }),
        ),
        (
            "a link made",
            Box::new(|c| std::os::unix::fs::symlink("../d0/f0", c.join("d4/link")).unwrap()),
        ),
        (
            "nested directories made with files",
            Box::new(|c| {
                std::fs::create_dir_all(c.join("d0/a/b/c")).unwrap();
                std::fs::write(c.join("d0/a/top"), "t").unwrap();
                std::fs::write(c.join("d0/a/b/c/deep"), "deep").unwrap();
            }),
        ),
        (
            "a file written in a new directory",
            Box::new(|c| std::fs::write(c.join("d0/a/b/later"), "later").unwrap()),
        ),
        (
            "a directory tree removed",
            Box::new(|c| std::fs::remove_dir_all(c.join("d0/a")).unwrap()),
        ),
        (
            "a directory replaced by a file of its name",
            Box::new(|c| {
                std::fs::remove_dir_all(c.join("d4")).unwrap();
                std::fs::write(c.join("d4"), "now a file").unwrap();
            }),
        ),
        (
            "a directory removed and made again with other files",
            Box::new(|c| {
                std::fs::remove_dir_all(c.join("d3")).unwrap();
                std::fs::create_dir(c.join("d3")).unwrap();
                std::fs::write(c.join("d3/other"), "other").unwrap();
            }),
        ),
        (
            "a file grown over max_file_bytes",
            Box::new(|c| std::fs::write(c.join("d2/big"), vec![b'x'; 5000]).unwrap()),
        ),
        (
            "a file's time changed alone",
            Box::new(|c| {
                let file = std::fs::File::options()
                    .write(true)
                    .open(c.join("d2/f3"))
                    .unwrap();
                file.set_modified(std::time::SystemTime::UNIX_EPOCH)
                    .unwrap();
            }),
        ),
        (
            "a shell command's changes",
            Box::new(|c| {
                sh(
                    c,
                    "printf x > d2/f4 && rm d2/f5 && mkdir -p sh/x && printf y > sh/x/y && mv d2/f6 sh/",
                )
            }),
        ),
        (
            "a file written with a fifo beside it",
            Box::new(|c| sh(c, "mkfifo d2/pipe && printf z > d2/f7")),
        ),
    ];
    for (what, change) in changes {
        change(cwd);
        let record = take(&checkpoints);
        assert!(
            !checkpoints.last_scan().walked,
            "after {what}: only the changed directories are read"
        );
        assert_same(&record, cwd, what);
    }
}

#[test]
fn ignore_rules_and_moved_directories_make_the_next_checkpoint_walk() {
    let (_home, work, checkpoints) = watched_tree(3);
    let cwd = work.path();
    std::fs::write(cwd.join("d1/.gitignore"), "f1\nsub/\n").unwrap();
    let record = take(&checkpoints);
    assert!(checkpoints.last_scan().walked, "an ignore file changed");
    assert_same(&record, cwd, "a .gitignore written");
    assert_eq!(record.files, 30, "29 files and the .gitignore");

    take(&checkpoints);
    take(&checkpoints);
    std::fs::create_dir(cwd.join("d1/sub")).unwrap();
    std::fs::write(cwd.join("d1/sub/ignored"), "i").unwrap();
    let record = take(&checkpoints);
    assert!(!checkpoints.last_scan().walked);
    assert_same(&record, cwd, "an ignored directory made");

    std::fs::rename(cwd.join("d2"), cwd.join("d0/d2")).unwrap();
    let record = take(&checkpoints);
    assert!(checkpoints.last_scan().walked, "a directory moved");
    assert_same(&record, cwd, "a directory moved");
    // Watches follow the moved directory to its new path.
    take(&checkpoints);
    std::fs::write(cwd.join("d0/d2/f0"), "after the move").unwrap();
    let record = take(&checkpoints);
    assert!(!checkpoints.last_scan().walked);
    assert_eq!(checkpoints.last_scan().dirs_listed, 1);
    assert_same(&record, cwd, "a file written in the moved directory");

    std::fs::create_dir_all(cwd.join(".git/info")).unwrap();
    std::fs::write(cwd.join(".git/info/exclude"), "d0/\n").unwrap();
    let record = take(&checkpoints);
    assert!(checkpoints.last_scan().walked, ".git/info/exclude changed");
    assert_same(&record, cwd, ".git/info/exclude written");
}

#[test]
fn a_new_process_walks_first_and_records_the_same_tree() {
    let (home, work, checkpoints) = watched_tree(4);
    std::fs::write(work.path().join("d0/f0"), "changed").unwrap();
    let before = take(&checkpoints);
    drop(checkpoints);
    let again = open(home.path(), work.path());
    let record = take(&again);
    assert!(again.last_scan().walked);
    assert_eq!(record.root, before.root);
    assert_eq!(again.last_scan().bytes_read, 0, "nothing read again");
}

/// The store removed while the agent runs (`rm -rf ~/.agent/checkpoints`): the next
/// checkpoint stores everything again instead of naming objects that are gone, so it can
/// still be restored.
#[test]
fn a_store_removed_while_running_is_filled_again() {
    let (home, work, checkpoints) = watched_tree(3);
    std::fs::remove_dir_all(home.path().join("checkpoints")).unwrap();
    std::fs::write(work.path().join("d0/f0"), "kept").unwrap();
    let record = take(&checkpoints);
    assert!(checkpoints.last_scan().walked, "the store is new: walk");
    assert_same(&record, work.path(), "the store removed");
    std::fs::write(work.path().join("d0/f0"), "overwritten").unwrap();
    std::fs::remove_file(work.path().join("d1/f1")).unwrap();
    checkpoints
        .restore(RestoreRequest {
            target: &record.id,
            force: true,
            entry_id: None,
            note: RewindNote {
                target: Some(record.id.clone()),
                head_before: None,
            },
        })
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(work.path().join("d0/f0")).unwrap(),
        "kept"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("d1/f1")).unwrap(),
        "1/1\n"
    );
}

#[test]
fn a_tree_cheaper_to_walk_than_to_watch_is_walked_every_time() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a"), "a\n").unwrap();
    let settings = Settings {
        watch_after_walking: std::time::Duration::from_secs(3600),
        ..settings()
    };
    let checkpoints = Checkpoints::open(
        &home.path().join("checkpoints"),
        work.path(),
        &settings,
        Vec::new(),
        "s",
    );
    for _ in 0..4 {
        take(&checkpoints);
        assert!(checkpoints.last_scan().walked);
    }
    std::fs::write(work.path().join("a"), "changed\n").unwrap();
    let record = take(&checkpoints);
    assert!(checkpoints.last_scan().walked);
    assert_same(&record, work.path(), "a change in a walked tree");
}
