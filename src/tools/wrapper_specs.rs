//! The command lines of programs that run another program (`sudo`, `timeout`, `setsid`,
//! `flock`, `unshare`, …): which options take a value, which mean nothing runs, which take
//! a shell script, and what the program does without a command. `wrappers` reads a command
//! line with these to find the command it runs. An option not listed here leaves the
//! wrapper judged as a whole (and every command it might run seen by deny rules).
//!
//! Written by hand from each program's manual: no crate describes these command lines.

/// What a wrapper without a command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bare {
    /// Nothing runs (or it only reports something).
    Nothing,
    /// It starts a shell that reads its commands from its input.
    Shell,
}

/// How a wrapper's command line reads.
#[derive(Debug)]
pub struct Spec {
    pub names: &'static [&'static str],
    /// Short options that take a value (the rest of the word, or the next word).
    pub short_values: &'static str,
    /// Short options that take none (or only an optional value in the same word).
    pub short_flags: &'static str,
    /// Long options (without `--`) that take a value (`--x=v` or `--x v`).
    pub long_values: &'static [&'static str],
    /// Long options that take none (or only an optional `=value`).
    pub long_flags: &'static [&'static str],
    /// Every `--long` option without `=` is a flag (valgrind, firejail).
    pub any_long_flag: bool,
    /// Options after which it runs no command (`command -v`, `taskset -p`).
    pub runs_nothing: &'static [&'static str],
    /// Options whose value is a shell script it runs (`su -c`).
    pub script: &'static [&'static str],
    /// Options whose value is a `NAME=value` for the command's environment.
    pub env: &'static [&'static str],
    /// Options that make it start a shell reading its input when no command follows.
    pub shell_flags: &'static [&'static str],
    /// Words between the options and the command (`timeout`'s duration).
    pub operands: usize,
    /// `NAME=value` words before the command set its environment (`sudo`).
    pub assignments: bool,
    /// Its command words are joined and run by `sh -c` (`watch`), unless one of
    /// `exec_flags` is given.
    pub through_shell: bool,
    pub exec_flags: &'static [&'static str],
    /// `-N` (a number) is an option (`nice -10`).
    pub numeric_flags: bool,
    pub bare: Bare,
}

const BASE: Spec = Spec {
    names: &[],
    short_values: "",
    short_flags: "",
    long_values: &[],
    long_flags: &["help", "version"],
    any_long_flag: false,
    runs_nothing: &[],
    script: &[],
    env: &[],
    shell_flags: &[],
    operands: 0,
    assignments: false,
    through_shell: false,
    exec_flags: &[],
    numeric_flags: false,
    bare: Bare::Nothing,
};

pub const SPECS: &[Spec] = &[
    Spec {
        names: &["sudo"],
        short_values: "CDghpRrtTUu",
        short_flags: "AbBEeHiKklNnPSsVv",
        long_values: &[
            "close-from",
            "chdir",
            "group",
            "host",
            "prompt",
            "chroot",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "user",
        ],
        long_flags: &[
            "askpass",
            "background",
            "bell",
            "preserve-env",
            "edit",
            "help",
            "set-home",
            "login",
            "remove-timestamp",
            "reset-timestamp",
            "list",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "shell",
            "version",
            "validate",
        ],
        runs_nothing: &[
            "-e",
            "--edit",
            "-l",
            "--list",
            "-v",
            "--validate",
            "-K",
            "--remove-timestamp",
            "-V",
            "--version",
        ],
        shell_flags: &["-s", "--shell", "-i", "--login"],
        assignments: true,
        ..BASE
    },
    Spec {
        names: &["doas"],
        short_values: "uC",
        short_flags: "nsL",
        runs_nothing: &["-L", "-C"],
        shell_flags: &["-s"],
        ..BASE
    },
    Spec {
        names: &["pkexec"],
        long_values: &["user"],
        long_flags: &["disable-internal-agent", "keep-cwd", "help", "version"],
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["timeout"],
        short_values: "sk",
        short_flags: "vfp",
        long_values: &["signal", "kill-after"],
        long_flags: &[
            "verbose",
            "foreground",
            "preserve-status",
            "help",
            "version",
        ],
        operands: 1,
        ..BASE
    },
    Spec {
        names: &["nice"],
        short_values: "n",
        long_values: &["adjustment"],
        numeric_flags: true,
        ..BASE
    },
    Spec {
        names: &["nohup", "builtin", "eatmydata", "catchsegv", "nocache"],
        ..BASE
    },
    Spec {
        names: &["exec"],
        short_values: "a",
        short_flags: "cl",
        ..BASE
    },
    Spec {
        names: &["command"],
        short_flags: "pvV",
        runs_nothing: &["-v", "-V"],
        ..BASE
    },
    Spec {
        names: &["time"],
        short_values: "fo",
        short_flags: "apvqV",
        long_values: &["format", "output"],
        long_flags: &[
            "append",
            "portability",
            "verbose",
            "quiet",
            "help",
            "version",
        ],
        ..BASE
    },
    Spec {
        names: &["stdbuf"],
        short_values: "ioe",
        long_values: &["input", "output", "error"],
        ..BASE
    },
    Spec {
        names: &["setsid"],
        short_flags: "cfw",
        long_flags: &["ctty", "fork", "wait", "help", "version"],
        ..BASE
    },
    Spec {
        names: &["taskset"],
        short_flags: "apc",
        long_flags: &["all-tasks", "pid", "cpu-list", "help", "version"],
        runs_nothing: &["-p", "--pid"],
        operands: 1,
        ..BASE
    },
    Spec {
        names: &["chrt"],
        short_values: "TPD",
        short_flags: "abdefiormRpv",
        long_values: &["sched-runtime", "sched-period", "sched-deadline"],
        long_flags: &[
            "all-tasks",
            "batch",
            "deadline",
            "ext",
            "fifo",
            "idle",
            "other",
            "rr",
            "reset-on-fork",
            "max",
            "pid",
            "verbose",
            "help",
            "version",
        ],
        runs_nothing: &["-p", "--pid", "-m", "--max"],
        operands: 1,
        ..BASE
    },
    Spec {
        names: &["ionice"],
        short_values: "cnpPu",
        short_flags: "t",
        long_values: &["class", "classdata", "pid", "pgid", "uid"],
        long_flags: &["ignore", "help", "version"],
        runs_nothing: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        ..BASE
    },
    Spec {
        names: &["unshare"],
        short_values: "SGRw",
        short_flags: "muinpUCTfrc",
        long_values: &[
            "setuid",
            "setgid",
            "root",
            "wd",
            "propagation",
            "setgroups",
            "map-user",
            "map-group",
            "map-users",
            "map-groups",
            "monotonic",
            "boottime",
        ],
        long_flags: &[
            "mount",
            "uts",
            "ipc",
            "net",
            "pid",
            "user",
            "cgroup",
            "time",
            "fork",
            "kill-child",
            "mount-proc",
            "mount-binfmt",
            "map-root-user",
            "map-current-user",
            "map-auto",
            "keep-caps",
            "help",
            "version",
        ],
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["nsenter"],
        short_values: "tSGWN",
        short_flags: "muinpUCTaFZcerw",
        long_values: &["target", "setuid", "setgid", "wdns", "net-socket"],
        long_flags: &[
            "all",
            "mount",
            "uts",
            "ipc",
            "net",
            "pid",
            "user",
            "cgroup",
            "time",
            "root",
            "wd",
            "env",
            "preserve-credentials",
            "keep-caps",
            "no-fork",
            "follow-context",
            "join-cgroup",
            "user-parent",
            "help",
            "version",
        ],
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["chroot"],
        long_values: &["userspec", "groups"],
        long_flags: &["skip-chdir", "help", "version"],
        operands: 1,
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["watch"],
        short_values: "nqs",
        short_flags: "dptbegrcCwx",
        long_values: &["interval", "equexit", "shotsdir"],
        long_flags: &[
            "differences",
            "precise",
            "no-title",
            "beep",
            "errexit",
            "chgexit",
            "no-rerun",
            "color",
            "no-color",
            "no-linewrap",
            "no-wrap",
            "exec",
            "help",
            "version",
        ],
        through_shell: true,
        exec_flags: &["-x", "--exec"],
        ..BASE
    },
    Spec {
        names: &["systemd-run"],
        short_values: "upEHM",
        short_flags: "rtPGqSd",
        long_values: &[
            "unit",
            "property",
            "setenv",
            "host",
            "machine",
            "description",
            "slice",
            "uid",
            "gid",
            "nice",
            "working-directory",
            "service-type",
            "path-property",
            "socket-property",
            "timer-property",
            "on-active",
            "on-boot",
            "on-startup",
            "on-unit-active",
            "on-unit-inactive",
            "on-calendar",
            "on-clock-change",
            "on-timezone-change",
            "json",
        ],
        long_flags: &[
            "user",
            "system",
            "scope",
            "remain-after-exit",
            "pty",
            "pipe",
            "collect",
            "quiet",
            "shell",
            "wait",
            "no-block",
            "send-sighup",
            "no-ask-password",
            "same-dir",
            "slice-inherit",
            "ignore-failure",
            "help",
            "version",
        ],
        env: &["-E", "--setenv"],
        shell_flags: &["-S", "--shell"],
        ..BASE
    },
    Spec {
        names: &["setpriv"],
        short_flags: "dV",
        long_values: &[
            "reuid",
            "regid",
            "ruid",
            "euid",
            "rgid",
            "egid",
            "groups",
            "inh-caps",
            "ambient-caps",
            "bounding-set",
            "securebits",
            "pdeathsig",
            "selinux-label",
            "apparmor-profile",
            "landlock-access",
            "landlock-rule",
            "ptracer",
        ],
        long_flags: &[
            "clear-groups",
            "keep-groups",
            "init-groups",
            "no-new-privs",
            "nnp",
            "reset-env",
            "dump",
            "help",
            "version",
        ],
        runs_nothing: &["-d", "--dump"],
        ..BASE
    },
    Spec {
        names: &["prlimit"],
        short_values: "po",
        short_flags: "cdefilmnqrstuvxy",
        long_values: &["pid", "output"],
        long_flags: &[
            "as",
            "core",
            "cpu",
            "data",
            "fsize",
            "locks",
            "memlock",
            "msgqueue",
            "nice",
            "nofile",
            "nproc",
            "rss",
            "rtprio",
            "rttime",
            "sigpending",
            "stack",
            "noheadings",
            "raw",
            "verbose",
            "help",
            "version",
        ],
        runs_nothing: &["-p", "--pid"],
        ..BASE
    },
    Spec {
        names: &["numactl"],
        short_values: "iCmNpPw",
        short_flags: "alHsb",
        long_values: &[
            "interleave",
            "membind",
            "cpunodebind",
            "physcpubind",
            "preferred",
            "preferred-many",
            "weighted-interleave",
        ],
        long_flags: &["all", "localalloc", "hardware", "show", "balancing", "help"],
        runs_nothing: &["-H", "--hardware", "-s", "--show"],
        ..BASE
    },
    Spec {
        names: &["cgexec"],
        short_values: "g",
        long_flags: &["sticky"],
        ..BASE
    },
    Spec {
        names: &["strace"],
        short_values: "abeEIoOpPsSuUX",
        short_flags: "cCdDfFhiknqrtTvVwxyYzZ",
        long_values: &[
            "attach",
            "trace",
            "signal",
            "status",
            "output",
            "user",
            "env",
            "string-limit",
            "summary-sort-by",
            "trace-path",
        ],
        long_flags: &[
            "summary-only",
            "summary",
            "follow-forks",
            "output-separately",
            "decode-fds",
            "decode-pids",
            "no-abbrev",
            "quiet",
            "relative-timestamps",
            "absolute-timestamps",
            "syscall-times",
            "verbose",
            "help",
            "version",
        ],
        env: &["-E", "--env"],
        runs_nothing: &["-p", "--attach"],
        ..BASE
    },
    Spec {
        names: &["ltrace"],
        short_values: "aAeFlnopsuwxDL",
        short_flags: "bcCfhiLrStTV",
        long_values: &["align", "output", "library"],
        long_flags: &["demangle", "indent", "help", "version"],
        runs_nothing: &["-p"],
        ..BASE
    },
    Spec {
        names: &["valgrind", "firejail"],
        short_flags: "qvhd",
        any_long_flag: true,
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["fakeroot"],
        short_values: "lsib",
        short_flags: "uh",
        long_values: &["lib", "faked"],
        long_flags: &["unknown-is-real", "help", "version"],
        bare: Bare::Shell,
        ..BASE
    },
    Spec {
        names: &["xvfb-run"],
        short_values: "nsfepw",
        short_flags: "ahl",
        long_values: &[
            "server-num",
            "server-args",
            "auth-file",
            "error-file",
            "xauth-protocol",
            "wait",
        ],
        long_flags: &["auto-servernum", "auto-display", "listen-tcp", "help"],
        ..BASE
    },
    Spec {
        names: &["dbus-run-session"],
        long_values: &["config-file", "dbus-daemon"],
        ..BASE
    },
    Spec {
        names: &["ssh-agent"],
        short_values: "aEOPt",
        short_flags: "csDdk",
        runs_nothing: &["-k"],
        ..BASE
    },
    Spec {
        names: &["unbuffer"],
        short_flags: "p",
        ..BASE
    },
    Spec {
        names: &["rlwrap"],
        short_values: "bCDefgHlOPqsStwz",
        short_flags: "acinNopIrRUWv",
        ..BASE
    },
    Spec {
        names: &["chronic"],
        short_flags: "ev",
        ..BASE
    },
    Spec {
        names: &["ifne"],
        short_flags: "n",
        ..BASE
    },
    Spec {
        names: &["torsocks"],
        short_values: "uapP",
        short_flags: "iqd6",
        long_values: &["user", "pass", "address", "port"],
        long_flags: &["isolate", "quiet", "debug", "help", "version"],
        ..BASE
    },
    Spec {
        names: &["proxychains", "proxychains4"],
        short_values: "f",
        short_flags: "q",
        ..BASE
    },
    Spec {
        names: &["faketime"],
        short_values: "f",
        short_flags: "m",
        long_values: &["date-prog"],
        long_flags: &["exclude-monotonic", "help", "version"],
        operands: 1,
        ..BASE
    },
    Spec {
        names: &["systemd-inhibit"],
        long_values: &["what", "who", "why", "mode"],
        long_flags: &["list", "no-pager", "no-legend", "help", "version"],
        runs_nothing: &["--list"],
        ..BASE
    },
    Spec {
        names: &["cpulimit"],
        short_values: "lpeP",
        short_flags: "zikv",
        long_values: &["limit", "pid", "exe", "path", "cpu"],
        long_flags: &["lazy", "include-children", "kill", "verbose", "help"],
        runs_nothing: &["-p", "--pid", "-e", "--exe", "-P", "--path"],
        ..BASE
    },
    Spec {
        names: &["gosu", "su-exec"],
        operands: 1,
        ..BASE
    },
];

/// The spec of the wrapper named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|spec| spec.names.contains(&name))
}

/// Programs that run a command inside an environment they build from the project (`uv
/// run`, `bundle exec`) or elsewhere (`docker exec`, `ssh`), and the subcommand that does.
/// They are judged as themselves by allow rules (`bash(uv run pytest*)` keeps working);
/// what they might run is seen by deny and ask rules.
pub const RUNNERS: &[(&str, &[&str])] = &[
    ("uv", &["run"]),
    ("poetry", &["run"]),
    ("pipenv", &["run"]),
    ("pdm", &["run"]),
    ("hatch", &["run"]),
    ("rye", &["run"]),
    ("pixi", &["run", "exec"]),
    ("conda", &["run"]),
    ("mamba", &["run"]),
    ("micromamba", &["run"]),
    ("bundle", &["exec"]),
    ("npm", &["exec", "x"]),
    ("pnpm", &["exec"]),
    ("yarn", &["exec"]),
    ("mise", &["exec", "x"]),
    ("asdf", &["exec"]),
    ("rbenv", &["exec"]),
    ("pyenv", &["exec"]),
    ("nodenv", &["exec"]),
    ("direnv", &["exec"]),
    ("dotenvx", &["run"]),
    ("doppler", &["run"]),
    ("aws-vault", &["exec"]),
    ("op", &["run"]),
    ("nix", &["develop", "shell"]),
    ("docker", &["run", "exec"]),
    ("podman", &["run", "exec"]),
    ("kubectl", &["exec"]),
    ("nix-shell", &[]),
    ("ssh", &[]),
];
