//! Ways out of the command sandbox, tried as a hostile model's `bash` calls would, with
//! real processes below the real supervisor — as root and as an unprivileged user where
//! the sandbox takes another path (a user namespace):
//!
//! - root is not a way out: no device nodes made, none planted opened, no capabilities;
//! - nothing planted inside the sandbox runs outside it: git's control files (of the
//!   workspace's repository, of one above it, of nested ones, submodules and linked
//!   worktrees) and the agent's own project files stay read-only, `.git` cannot be moved
//!   away and replaced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use std::path::Path;
use support::sandbox::{
    User, bash, blocked, config, git, give, repository, sandbox, scratch, temp, text,
};

/// Make a character device with /dev/null's numbers (1, 3) at `path`: harmless if opened.
fn plant_null_device(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod on a NUL-terminated path.
    let made = unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(made, 0, "mknod {}", path.display());
}

#[tokio::test]
async fn root_is_no_way_out_no_devices_no_capabilities() {
    for user in User::both() {
        let workspace = scratch(user);
        let tmp = temp(user);
        plant_null_device(&workspace.path().join("planted"));
        plant_null_device(&tmp.path().join("planted"));
        let command = format!(
            "echo uid=$(id -u); grep ^Cap /proc/self/status; \
             mknod made c 1 3 && echo made-device; \
             echo x > planted && echo wrote-planted; \
             cat planted && echo read-planted; \
             echo x > {tmp}/planted && echo wrote-tmp-planted; \
             for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/loop0 /dev/kmsg; do \
               [ -e $d ] && head -c 1 $d > /dev/null && echo read-device-$d; done; \
             true",
            tmp = tmp.path().display()
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config(false)),
            &command,
        )
        .await;
        let text = text(&output);
        support::sandbox::assert_ran_as(user, &text);
        let caps: Vec<&str> = text.lines().filter(|l| l.starts_with("Cap")).collect();
        assert_eq!(caps.len(), 5, "{user:?}: {text}");
        for line in caps {
            assert!(
                line.ends_with("\t0000000000000000"),
                "{user:?}: a capability is left: {line}\n{text}"
            );
        }
        assert!(
            !workspace.path().join("made").exists(),
            "{user:?}: a device was made: {text}"
        );
        assert!(!text.contains("read-device"), "{user:?}: {text}");
        for escaped in [
            "made-device",
            "wrote-planted",
            "read-planted",
            "wrote-tmp-planted",
        ] {
            assert!(!text.contains(escaped), "{user:?}: {escaped}: {text}");
        }
        let _ = blocked(&output);
    }
}

/// Shell lines a hostile command runs to make `dir/evil.sh` (which touches `mark` when
/// run) and `dir/evil/`, a git directory whose config runs it on the next `git status`.
fn make_evil(dir: &Path, mark: &Path) -> String {
    format!(
        "mkdir -p {dir}; printf '#!/bin/sh\\ntouch {mark}\\n' > {dir}/evil.sh; chmod +x {dir}/evil.sh; \
         git init -q {dir}/evil-repo; cp -r {dir}/evil-repo/.git {dir}/evil; \
         printf '[core]\\n\\tfsmonitor = {dir}/evil.sh\\n' >> {dir}/evil/config; ",
        dir = dir.display(),
        mark = mark.display()
    )
}

/// The config lines that run `evil.sh` in `dir`.
fn evil_config(dir: &Path) -> String {
    format!("[core]\\n\\tfsmonitor = {}/evil.sh\\n", dir.display())
}

/// Run `command` as `user` in the sandbox of `cwd`, then `git status` in each of `status_in`
/// as the user would, outside the sandbox; `mark` must not exist after.
async fn attack(user: User, cwd: &Path, command: &str, status_in: &[&Path], mark: &Path) -> String {
    let output = bash(user, cwd, sandbox(cwd, &config(false)), command).await;
    let text = text(&output);
    support::sandbox::assert_ran_as(user, &text);
    for dir in status_in {
        let status = git(dir, &["status", "--short"]);
        assert!(
            !mark.exists(),
            "{user:?}: planted code ran outside the sandbox on `git status` in {}:\n{text}\n{status:?}",
            dir.display()
        );
    }
    text
}

#[tokio::test]
async fn the_workspace_git_cannot_be_changed_moved_or_replaced() {
    for user in User::both() {
        let workspace = scratch(user);
        let ws = workspace.path();
        repository(ws);
        give(ws, user);
        let spare = temp(user);
        let marks = scratch(User::Me);
        let mark = marks.path().join("ran");
        let before = std::fs::read(ws.join(".git/config")).unwrap();
        let evil = spare.path();
        let command = format!(
            "echo uid=$(id -u); {make} \
             printf '{config}' >> .git/config; \
             printf '#!/bin/sh\\ntouch {mark}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
             echo {evil}/evil > .git/commondir; \
             mkdir -p .git/info; echo '* filter=x' > .git/info/attributes; \
             echo garbage > .git/index; \
             mv .git/config .git/config.old; \
             mv .git .g && cp -r .g .git && printf '{config}' >> .git/config; \
             rm -rf .git; cp -r {evil}/evil .git; \
             true",
            make = make_evil(evil, &mark),
            config = evil_config(evil),
            evil = evil.display(),
            mark = mark.display()
        );
        let text = attack(user, ws, &command, &[ws], &mark).await;
        assert!(
            ws.join(".git").is_dir() && !ws.join(".g").exists(),
            "{user:?}: {text}"
        );
        assert_eq!(
            std::fs::read(ws.join(".git/config")).unwrap(),
            before,
            "{user:?}: {text}"
        );
        for planted in ["hooks/pre-commit", "commondir", "info/attributes"] {
            assert!(
                !ws.join(".git").join(planted).exists(),
                "{user:?}: {planted}: {text}"
            );
        }
        let commit = git(ws, &["commit", "-q", "--allow-empty", "-m", "after"]);
        assert!(commit.status.success(), "{commit:?}");
        assert!(!mark.exists(), "{user:?}: a hook ran on commit: {text}");
    }
}

#[tokio::test]
async fn a_repository_above_the_workspace_in_the_temp_dir_is_guarded() {
    for user in User::both() {
        let outer = temp(user);
        repository(outer.path());
        let cwd = outer.path().join("sub");
        std::fs::create_dir(&cwd).unwrap();
        give(outer.path(), user);
        let marks = scratch(User::Me);
        let mark = marks.path().join("ran");
        let evil = outer.path().join("sub/tools");
        let command = format!(
            "echo uid=$(id -u); {make} printf '{config}' >> ../.git/config; \
             cd .. && mv .git .g; mv sub sub2; true",
            make = make_evil(&evil, &mark),
            config = evil_config(&evil),
        );
        let text = attack(user, &cwd, &command, &[&cwd, outer.path()], &mark).await;
        assert!(
            cwd.is_dir() && outer.path().join(".git").is_dir(),
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn nested_repositories_and_submodules_are_guarded() {
    for user in User::both() {
        let workspace = scratch(user);
        let ws = workspace.path();
        let library = scratch(User::Me);
        repository(library.path());
        repository(ws);
        let url = library.path().display().to_string();
        for args in [
            &["submodule", "add", "-q", url.as_str(), "sub"][..],
            &["submodule", "add", "-q", url.as_str(), "empty"],
            &["commit", "-qm", "submodules"],
            &["submodule", "deinit", "-q", "empty"],
        ] {
            let out = git(ws, args);
            assert!(out.status.success(), "{args:?}: {out:?}");
        }
        std::fs::create_dir_all(ws.join("vendor")).unwrap();
        assert!(
            git(ws, &["clone", "-q", &url, "vendor/lib"])
                .status
                .success()
        );
        give(ws, user);
        let spare = temp(user);
        let marks = scratch(User::Me);
        let mark = marks.path().join("ran");
        let evil = spare.path();
        let command = format!(
            "echo uid=$(id -u); {make} \
             printf '{config}' >> vendor/lib/.git/config; \
             mv vendor vendor2; mv vendor/lib vendor/lib2; \
             echo 'gitdir: {evil}/evil' > sub/.git; \
             rm -f sub/.git; cp -r {evil}/evil sub/.git; \
             printf '{config}' >> .git/modules/sub/config; \
             echo 'gitdir: {evil}/evil' > empty/.git; \
             true",
            make = make_evil(evil, &mark),
            config = evil_config(evil),
            evil = evil.display(),
        );
        let lib = ws.join("vendor/lib");
        let text = attack(user, ws, &command, &[ws, &lib, &ws.join("sub")], &mark).await;
        assert!(lib.join(".git").is_dir(), "{user:?}: {text}");
        assert!(!ws.join("empty/.git").exists(), "{user:?}: {text}");
    }
}

#[tokio::test]
async fn a_linked_worktree_keeps_its_git_file() {
    for user in User::both() {
        let main = scratch(User::Me);
        repository(main.path());
        let trees = scratch(user);
        let tree = trees.path().join("feature");
        let out = git(
            main.path(),
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "feature",
                tree.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{out:?}");
        give(&tree, user);
        let spare = temp(user);
        let marks = scratch(User::Me);
        let mark = marks.path().join("ran");
        let evil = spare.path();
        let pointer = std::fs::read(tree.join(".git")).unwrap();
        let command = format!(
            "echo uid=$(id -u); {make} echo 'gitdir: {evil}/evil' > .git; \
             rm -f .git; echo 'gitdir: {evil}/evil' > .git; true",
            make = make_evil(evil, &mark),
            evil = evil.display(),
        );
        let text = attack(user, &tree, &command, &[&tree], &mark).await;
        assert_eq!(
            std::fs::read(tree.join(".git")).unwrap(),
            pointer,
            "{user:?}: {text}"
        );
    }
}

#[tokio::test]
async fn the_agents_own_files_stay_read_only() {
    for user in User::both() {
        let workspace = scratch(user);
        let ws = workspace.path();
        repository(ws);
        std::fs::create_dir_all(ws.join(".agent/commands")).unwrap();
        std::fs::write(ws.join(".agent/settings.json"), "{}").unwrap();
        std::fs::create_dir_all(ws.join(".claude/skills/s")).unwrap();
        let home = ws.join("agent-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), "").unwrap();
        give(ws, user);
        let mut config = config(false);
        config.agent_home = Some(home.clone());
        let command = "echo uid=$(id -u); \
             echo '{\"hooks\":{}}' > .agent/settings.json; \
             echo x > .agent/commands/new.md; echo x > .claude/skills/s/SKILL.md; \
             echo 'api_key_command = \"evil\"' >> agent-home/config.toml; \
             mv .agent .agent-old; mv agent-home home2; true";
        let output = bash(user, ws, sandbox(ws, &config), command).await;
        let text = text(&output);
        support::sandbox::assert_ran_as(user, &text);
        assert_eq!(
            std::fs::read_to_string(ws.join(".agent/settings.json")).unwrap(),
            "{}"
        );
        assert!(!ws.join(".agent/commands/new.md").exists(), "{text}");
        assert!(!ws.join(".claude/skills/s/SKILL.md").exists(), "{text}");
        assert_eq!(
            std::fs::read_to_string(home.join("config.toml")).unwrap(),
            "",
            "{text}"
        );
        assert!(home.is_dir(), "{text}");
    }
}

#[tokio::test]
async fn a_repository_planted_where_git_would_find_it_is_reported() {
    let outer = temp(User::Me);
    repository(outer.path());
    let cwd = outer.path().join("sub");
    std::fs::create_dir(&cwd).unwrap();
    let output = bash(
        User::Me,
        &cwd,
        sandbox(&cwd, &config(false)),
        "git init -q . && echo made",
    )
    .await;
    let text = text(&output);
    assert!(text.contains("made"), "{text}");
    assert!(
        text.contains(&format!("{}/.git", cwd.display())) && text.contains("git commands run in"),
        "{text}"
    );
}

/// Config a sandboxed command could have written into a repository (before this agent
/// started, or into one it made): every program git may run points at `evil`.
fn planted_config(evil: &Path, hooks: &Path) -> String {
    let evil = evil.display();
    format!(
        "[core]\n\tfsmonitor = {evil}\n\thooksPath = {hooks}\n\tpager = {evil}\n\
         \tattributesFile = {attributes}\n\
         [diff]\n\texternal = {evil}\n\
         [filter \"x\"]\n\tclean = {evil}\n\tsmudge = {evil}\n\tprocess = {evil}\n\trequired = true\n\
         [filter \"a=b\"]\n\tclean = {evil}\n\
         [diff \"y\"]\n\ttextconv = {evil}\n\tcommand = {evil}\n",
        hooks = hooks.display(),
        attributes = hooks.join("attributes").display(),
    )
}

#[tokio::test]
async fn the_agents_own_git_runs_nothing_a_command_planted() {
    use std::os::unix::fs::PermissionsExt;
    let workspace = scratch(User::Me);
    let ws = workspace.path();
    repository(ws);
    std::fs::write(ws.join("other"), "1\n").unwrap();
    assert!(git(ws, &["add", "other"]).status.success());
    assert!(git(ws, &["commit", "-qm", "other"]).status.success());
    let planted = scratch(User::Me);
    let mark = planted.path().join("ran");
    let evil = planted.path().join("evil.sh");
    std::fs::write(&evil, format!("#!/bin/sh\ntouch {}\ncat\n", mark.display())).unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hooks = planted.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "post-index-change",
        "pre-commit",
        "post-checkout",
        "reference-transaction",
    ] {
        std::fs::copy(&evil, hooks.join(hook)).unwrap();
    }
    std::fs::write(hooks.join("attributes"), "* filter=x diff=y\n").unwrap();
    let mut config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    config.push_str(&planted_config(&evil, &hooks));
    std::fs::write(ws.join(".git/config"), config).unwrap();
    std::fs::write(
        ws.join(".gitattributes"),
        "* filter=x diff=y\nother filter=a=b\n",
    )
    .unwrap();
    std::fs::write(ws.join("README"), "changed before start\n").unwrap();

    let baseline = agent::tui::diff_view::git_baseline_now(ws).await.unwrap();
    std::fs::write(ws.join("README"), "changed in the session\n").unwrap();
    std::fs::write(ws.join("other"), "2\n").unwrap();
    // A repository planted in the working directory later is not the one diffed.
    let sub = ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    assert!(git(&sub, &["init", "-q"]).status.success());
    let changes = agent::tui::diff_view::git_changes(&baseline).await.unwrap();
    assert!(!mark.exists(), "the agent's git ran a planted program");
    let names: Vec<String> = changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    assert!(names.contains(&"README".to_string()), "{names:?}");
    assert!(names.contains(&"other".to_string()), "{names:?}");
    let readme = changes.iter().find(|c| c.path.ends_with("README")).unwrap();
    let diff = readme.diff.as_deref().unwrap();
    assert!(
        diff.contains("-changed before start") && diff.contains("+changed in the session"),
        "{diff}"
    );
}

/// The project files guarded are those the agent loads: up to the repository root as git
/// finds it. A broken `.git` on the way (an empty directory, planted or left over) does not
/// end the walk early, so a writable root above the working directory keeps the root's
/// `.agent` read-only.
#[tokio::test]
async fn a_broken_git_below_the_root_does_not_hide_the_roots_agent_files() {
    for user in User::both() {
        let workspace = scratch(user);
        let ws = workspace.path();
        repository(ws);
        std::fs::create_dir_all(ws.join(".agent/commands")).unwrap();
        let app = ws.join("app");
        std::fs::create_dir_all(app.join(".git")).unwrap();
        give(ws, user);
        let mut config = config(false);
        config.writable_roots = vec![ws.to_path_buf()];
        let command = "echo uid=$(id -u); echo x > ../.agent/commands/new.md; true";
        let output = bash(user, &app, sandbox(&app, &config), command).await;
        let text = text(&output);
        support::sandbox::assert_ran_as(user, &text);
        assert!(
            !ws.join(".agent/commands/new.md").exists(),
            "{user:?}: {text}"
        );
    }
}
