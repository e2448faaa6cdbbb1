use super::*;

fn words(text: &str) -> Vec<Word> {
    text.split(' ').map(Word::literal).collect()
}

fn command(text: &str) -> Inner {
    Inner::Command(Run::of(&words(text)))
}

fn runs(text: &str) -> Option<String> {
    match inner(&words(text)) {
        Inner::Command(run) => Some(
            run.words
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        Inner::Script(script) => Some(format!("script: {script}")),
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn wrappers_yield_the_command_they_run() {
    assert_eq!(inner(&words("sudo -u root rm -rf /")), command("rm -rf /"));
    assert!(
        matches!(inner(&words("env -i A=1 B=2 make")), Inner::Command(r) if r.words == words("make") && r.env.len() == 2)
    );
    assert_eq!(
        inner(&words("timeout -s KILL 10 cargo test")),
        command("cargo test")
    );
    assert_eq!(inner(&words("nice -n 5 make")), command("make"));
    assert_eq!(inner(&words("nice -10 make")), command("make"));
    assert_eq!(inner(&words("nohup ./server")), command("./server"));
    assert_eq!(inner(&words("xargs -I {} rm {}")), command("rm {}"));
    assert!(
        matches!(inner(&words("xargs -0 rm -f")), Inner::Command(r) if r.words.len() == 3 && r.words[2].text == "…")
    );
    assert_eq!(inner(&words("command -v git")), Inner::None);
    assert_eq!(inner(&words("/usr/bin/sudo ls")), command("ls"));
    assert_eq!(
        inner(&words("find . -name *.o -exec rm {} ; -exec echo {} +")),
        Inner::Commands(vec![words("rm {}"), words("echo {}")])
    );
    assert_eq!(
        inner(&words("bash -lc git status")),
        Inner::Script("git".to_string())
    );
    assert_eq!(inner(&words("ls -la")), Inner::None);
}

#[test]
fn the_whole_family_of_wrappers_is_looked_through() {
    for (line, expected) in [
        ("setsid -f rm -rf x", "rm -rf x"),
        ("taskset -c 0-3 rm -rf x", "rm -rf x"),
        ("taskset 0x1 rm -rf x", "rm -rf x"),
        ("flock -w 5 /tmp/lock rm -rf x", "rm -rf x"),
        ("flock /tmp/lock -c rm", "script: rm"),
        ("chrt -f 10 rm -rf x", "rm -rf x"),
        ("ionice -c 3 rm -rf x", "rm -rf x"),
        ("unshare -r -n rm -rf x", "rm -rf x"),
        ("nsenter -t 1 -m rm -rf x", "rm -rf x"),
        ("chroot / rm -rf x", "rm -rf x"),
        ("runuser -u nobody -- rm -rf x", "rm -rf x"),
        ("su -c rm root", "script: rm"),
        ("su - root -c rm", "script: rm"),
        ("watch -n 1 rm -rf x", "script: rm -rf x"),
        ("watch -x rm -rf x", "rm -rf x"),
        ("script -qc rm /dev/null", "script: rm"),
        ("script -q -c rm /dev/null", "script: rm"),
        ("pkexec rm -rf x", "rm -rf x"),
        ("systemd-run --user -p Nice=5 rm -rf x", "rm -rf x"),
        ("setpriv --reuid=1000 --clear-groups rm -rf x", "rm -rf x"),
        ("prlimit --nofile=10 rm -rf x", "rm -rf x"),
        ("numactl -N 0 rm -rf x", "rm -rf x"),
        ("strace -f -o out rm -rf x", "rm -rf x"),
        ("valgrind --tool=memcheck rm -rf x", "rm -rf x"),
        ("fakeroot rm -rf x", "rm -rf x"),
        ("bwrap --ro-bind / / --dev /dev rm -rf x", "rm -rf x"),
        ("busybox rm -rf x", "rm -rf x"),
        ("setarch x86_64 -R rm -rf x", "rm -rf x"),
        ("linux32 rm -rf x", "rm -rf x"),
        ("builtin eval x", "eval x"),
        ("coproc rm -rf x", "rm -rf x"),
        ("trap rm EXIT", "script: rm"),
        ("stdbuf -oL rm -rf x", "rm -rf x"),
        ("time -p rm -rf x", "rm -rf x"),
        ("exec -a name rm -rf x", "rm -rf x"),
        ("sg staff -c rm", "script: rm"),
        ("xvfb-run -a rm -rf x", "rm -rf x"),
        ("gosu nobody rm -rf x", "rm -rf x"),
    ] {
        assert_eq!(runs(line).as_deref(), Some(expected), "{line}");
    }
}

#[test]
fn environment_set_by_a_wrapper_is_reported() {
    let Inner::Command(run) = inner(&words("sudo LD_PRELOAD=x.so ls")) else {
        panic!()
    };
    assert_eq!(run.words, words("ls"));
    assert_eq!(run.env, words("LD_PRELOAD=x.so"));
    let Inner::Command(run) = inner(&words("env BASH_FUNC_ls%%=x bash")) else {
        panic!()
    };
    assert_eq!(run.env[0].text, "BASH_FUNC_ls%%=x");
    let Inner::Command(run) = inner(&words("systemd-run -E LD_PRELOAD=x ls")) else {
        panic!()
    };
    assert_eq!(run.env[0].text, "LD_PRELOAD=x");
}

#[test]
fn an_unknown_option_leaves_every_possible_command_to_deny_rules() {
    let Inner::Maybe { commands, .. } = inner(&words("setsid --frobnicate rm -rf x")) else {
        panic!()
    };
    assert!(commands.contains(&words("rm -rf x")), "{commands:?}");
    let Inner::Maybe { commands, scripts } = inner(&words("uv run --with x pytest -q")) else {
        panic!()
    };
    assert!(commands.contains(&words("pytest -q")), "{commands:?}");
    assert!(scripts.is_empty());
    assert_eq!(inner(&words("uv sync")), Inner::None);
}

#[test]
fn what_cannot_be_known_before_it_runs_is_opaque() {
    for line in [
        "eval ls",
        "bash",
        "sh -s",
        "bash /dev/stdin",
        "source /dev/stdin",
        ". /proc/self/fd/0",
        "alias ll=rm",
        "hash -p /tmp/x ls",
        "enable -f ./x.so x",
        "fc -s",
        "compgen -W x",
        "mapfile -C cb -c 1",
        "parallel rm ::: a",
        "su root",
        "script out.log",
        "unshare -r",
        "coproc NAME { rm x ; }",
        "fish -c rm",
        "sudo -s",
    ] {
        assert!(matches!(inner(&words(line)), Inner::Opaque(_)), "{line}");
    }
    assert_eq!(inner(&words("bash script.sh")), Inner::None);
    assert_eq!(inner(&words("source venv/bin/activate")), Inner::None);
    assert_eq!(inner(&words("trap - EXIT")), Inner::None);
    assert_eq!(inner(&words("alias")), Inner::None);
    let script = vec![
        Word::literal("bash"),
        Word::literal("-c"),
        Word::unknown("\"$CMD\""),
    ];
    assert!(matches!(inner(&script), Inner::Opaque(why) if why.contains("$CMD")));
}
