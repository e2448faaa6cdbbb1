//! Which environment variables change what a command runs — the one list permission rules
//! use. `LD_PRELOAD=./x.so ls` does not run `ls` alone, and `GIT_CONFIG_COUNT=1 …
//! git status` can make git run any program: an allow rule for `ls` or `git status` does
//! not cover them. Every other variable (`RUST_LOG=debug`, `CI=1`, `NODE_ENV=test`) is
//! harmless to rules and stays so. Also which variables hold text the shell expands or
//! runs later (`PS4`, `BASH_ENV`, `PROMPT_COMMAND`), whose value must be a plain literal
//! for the command to be judged at all.
//!
//! Written by hand: no crate lists these, and the list is a security decision of ours.

/// Exact names that change what runs, and why.
const EXACT: &[(&str, &str)] = &[
    // The dynamic loader and the C library.
    (
        "GCONV_PATH",
        "makes the C library load character-set modules from where it names",
    ),
    (
        "GLIBC_TUNABLES",
        "changes how the C library behaves inside every program",
    ),
    (
        "LOCPATH",
        "makes the C library read locale files from where it names",
    ),
    // Shells.
    ("BASH_ENV", "names a file a non-interactive bash runs first"),
    ("ENV", "names a file a POSIX shell runs first"),
    ("SHELLOPTS", "sets shell options in every bash it starts"),
    ("BASHOPTS", "sets shell options in every bash it starts"),
    (
        "PS0",
        "is expanded by the shell, running the commands in it",
    ),
    (
        "PS1",
        "is expanded by the shell, running the commands in it",
    ),
    (
        "PS2",
        "is expanded by the shell, running the commands in it",
    ),
    (
        "PS4",
        "is expanded by `bash -x` before each command, running the commands in it",
    ),
    ("PROMPT_COMMAND", "is a command the shell runs"),
    ("IFS", "changes how the shell splits words"),
    ("PATH", "changes which program a command name runs"),
    ("CDPATH", "changes which directory `cd` enters"),
    (
        "BASH_LOADABLES_PATH",
        "changes where bash loads builtins from",
    ),
    (
        "ZDOTDIR",
        "names the directory zsh runs its start-up files from",
    ),
    ("SHELL", "names the shell programs start"),
    (
        "HOME",
        "changes which start-up and configuration files programs read",
    ),
    (
        "XDG_CONFIG_HOME",
        "changes which configuration files programs read",
    ),
    (
        "XDG_CONFIG_DIRS",
        "changes which configuration files programs read",
    ),
    ("INPUTRC", "names the readline start-up file"),
    // Programs that other programs start.
    ("EDITOR", "names a program that others start"),
    ("VISUAL", "names a program that others start"),
    ("PAGER", "names a program that others start"),
    ("MANPAGER", "names a program that `man` starts"),
    ("MANOPT", "passes options to `man`"),
    ("BROWSER", "names a program that others start"),
    ("LESS", "passes options (which can run commands) to `less`"),
    ("LESSOPEN", "is a command `less` runs on each file"),
    ("LESSCLOSE", "is a command `less` runs on each file"),
    ("SYSTEMD_PAGER", "names a program that systemd tools start"),
    ("SYSTEMD_EDITOR", "names a program that systemd tools start"),
    ("SUDO_ASKPASS", "names a program `sudo` starts"),
    ("SSH_ASKPASS", "names a program `ssh` starts"),
    ("SUDO_EDITOR", "names a program `sudoedit` starts"),
    // Language runtimes.
    ("NODE_OPTIONS", "passes options such as `--require` to node"),
    ("NODE_PATH", "changes where node finds modules"),
    ("NODE_REPL_EXTERNAL_MODULE", "makes node load a module"),
    ("RUBYOPT", "passes options such as `-r` to ruby"),
    ("RUBYLIB", "changes where ruby finds libraries"),
    ("GEM_HOME", "changes which gems ruby loads"),
    ("GEM_PATH", "changes which gems ruby loads"),
    (
        "JAVA_TOOL_OPTIONS",
        "passes options such as `-javaagent` to java",
    ),
    (
        "_JAVA_OPTIONS",
        "passes options such as `-javaagent` to java",
    ),
    (
        "JDK_JAVA_OPTIONS",
        "passes options such as `-javaagent` to java",
    ),
    ("JAVA_OPTS", "passes options to java"),
    ("JAVA_HOME", "changes which java runs"),
    ("CLASSPATH", "changes which classes java loads"),
    ("MAVEN_OPTS", "passes options to maven's java"),
    ("MAVEN_ARGS", "passes arguments to maven"),
    ("GRADLE_OPTS", "passes options to gradle's java"),
    (
        "GRADLE_USER_HOME",
        "names where gradle reads init scripts from",
    ),
    ("SBT_OPTS", "passes options to sbt"),
    (
        "PHPRC",
        "names the php configuration, which can load extensions",
    ),
    ("PHP_INI_SCAN_DIR", "names where php reads configuration"),
    ("LUA_PATH", "changes where lua finds modules"),
    ("LUA_CPATH", "changes where lua loads native modules"),
    ("R_PROFILE", "names a file R runs"),
    ("R_PROFILE_USER", "names a file R runs"),
    ("R_ENVIRON", "names a file R reads"),
    ("R_ENVIRON_USER", "names a file R reads"),
    // Build tools.
    (
        "MAKEFLAGS",
        "passes options and variables (such as SHELL) to make",
    ),
    ("MFLAGS", "passes options to make"),
    ("MAKEFILES", "makes make read more makefiles"),
    ("CC", "names the C compiler builds run"),
    ("CXX", "names the C++ compiler builds run"),
    ("CPP", "names the preprocessor builds run"),
    ("LD", "names the linker builds run"),
    ("AR", "names a program builds run"),
    ("AS", "names the assembler builds run"),
    ("FC", "names the Fortran compiler builds run"),
    (
        "CFLAGS",
        "passes flags (which can load plugins) to the compiler",
    ),
    (
        "CXXFLAGS",
        "passes flags (which can load plugins) to the compiler",
    ),
    ("CPPFLAGS", "passes flags to the preprocessor"),
    ("LDFLAGS", "passes flags to the linker"),
    ("COMPILER_PATH", "changes where gcc finds its programs"),
    ("GCC_EXEC_PREFIX", "changes where gcc finds its programs"),
    ("PKG_CONFIG", "names a program builds run"),
    ("RUSTC", "names the compiler cargo runs"),
    ("RUSTDOC", "names the program cargo runs for docs"),
    ("RUSTC_WRAPPER", "names a program cargo runs around rustc"),
    (
        "RUSTC_WORKSPACE_WRAPPER",
        "names a program cargo runs around rustc",
    ),
    ("RUSTFLAGS", "passes flags (such as `-C linker=`) to rustc"),
    ("RUSTDOCFLAGS", "passes flags to rustdoc"),
    ("GOFLAGS", "passes flags (such as `-toolexec`) to go"),
    ("GOROOT", "changes which go toolchain runs"),
    ("GOTOOLCHAIN", "makes go download and run another toolchain"),
    ("GOENV", "names a go configuration file"),
    ("GOPATH", "changes where go finds and installs code"),
    ("GOBIN", "changes where go installs programs"),
    ("GOCACHE", "changes where go takes built code from"),
    ("GOPROXY", "changes where go downloads code from"),
    ("GOWORK", "changes which modules go builds"),
    ("GOINSECURE", "turns off go's checks of downloaded code"),
    ("GONOSUMDB", "turns off go's checks of downloaded code"),
    ("GONOSUMCHECK", "turns off go's checks of downloaded code"),
    ("GOSUMDB", "turns off go's checks of downloaded code"),
    ("GOPRIVATE", "turns off go's checks of downloaded code"),
    ("GONOPROXY", "changes where go downloads code from"),
    // Other configuration that runs programs.
    (
        "OPENSSL_CONF",
        "names an OpenSSL configuration, which can load engines",
    ),
    (
        "OPENSSL_ENGINES",
        "changes where OpenSSL loads engines from",
    ),
    (
        "OPENSSL_MODULES",
        "changes where OpenSSL loads modules from",
    ),
    ("CURL_HOME", "names where curl reads its configuration"),
    ("WGETRC", "names wget's configuration"),
    (
        "KUBECONFIG",
        "names a kubectl configuration, which can run credential programs",
    ),
    (
        "AWS_CONFIG_FILE",
        "names an AWS configuration, which can run credential programs",
    ),
    ("CLOUDSDK_CONFIG", "names the gcloud configuration"),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "names credentials that can run a program",
    ),
    (
        "DOCKER_CONFIG",
        "names a docker configuration, which can run credential helpers",
    ),
    (
        "TERMINFO",
        "names where terminal descriptions are read from",
    ),
];

/// Name prefixes that change what runs (every variable of a tool's family), and why.
const PREFIXES: &[(&str, &str)] = &[
    (
        "LD_",
        "changes what the dynamic loader loads into the program",
    ),
    (
        "DYLD_",
        "changes what the dynamic loader loads into the program",
    ),
    (
        "BASH_FUNC_",
        "defines a shell function every bash it starts runs in place of a command",
    ),
    (
        "GIT_",
        "changes git's configuration or the programs git runs",
    ),
    (
        "PYTHON",
        "changes what the python interpreter loads or runs",
    ),
    ("PERL", "changes what perl loads or runs"),
    (
        "NPM_CONFIG_",
        "changes npm's configuration, including the programs it runs",
    ),
    (
        "npm_config_",
        "changes npm's configuration, including the programs it runs",
    ),
    (
        "YARN_",
        "changes yarn's configuration, including the programs it runs",
    ),
    ("PNPM_", "changes pnpm's configuration"),
    (
        "BUNDLE_",
        "changes bundler's configuration, including which Gemfile runs",
    ),
    ("PIP_", "changes what pip installs"),
    ("UV_", "changes what uv installs and runs"),
    ("POETRY_", "changes poetry's configuration"),
    ("CONDA_", "changes conda's configuration"),
    (
        "CARGO_",
        "changes cargo's configuration, including the programs it runs",
    ),
    ("RUSTUP_", "changes which Rust toolchain runs"),
    ("CGO_", "passes flags to the C compiler go runs"),
    (
        "CMAKE_",
        "changes which compilers and toolchain files cmake uses",
    ),
    ("CCACHE_", "changes what ccache runs"),
    ("DISTCC_", "changes what distcc runs"),
];

/// Variables in a dangerous family that are harmless all the same (identity, output,
/// verbosity): kept out so that everyday commands stay covered by their rules.
const HARMLESS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_OPTIONAL_LOCKS",
    "GIT_FLUSH",
    "GIT_MERGE_AUTOEDIT",
    "GIT_MERGE_VERBOSITY",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_REFLOG_ACTION",
    "GIT_PROGRESS_DELAY",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "PYTHONHASHSEED",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONTRACEMALLOC",
    "PYTHONOPTIMIZE",
    "PYTHONVERBOSE",
    "PYTHONWARNDEFAULTENCODING",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_TERM_PROGRESS_WHEN",
    "CARGO_INCREMENTAL",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_JOBS",
    "CARGO_NET_OFFLINE",
    "CARGO_LOG",
    "CGO_ENABLED",
    "CMAKE_BUILD_PARALLEL_LEVEL",
    "CMAKE_BUILD_TYPE",
    "CMAKE_GENERATOR",
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "UV_NO_PROGRESS",
    "UV_NO_CACHE",
    "UV_FROZEN",
    "UV_LOCKED",
    "UV_OFFLINE",
    "PIP_NO_INPUT",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "PIP_QUIET",
    "PIP_PROGRESS_BAR",
];

/// Variables whose value the shell expands or runs when it uses them: their value must be
/// written out without expansions or backquotes for the command to be judged.
const EVALUATED: &[&str] = &["PS0", "PS1", "PS2", "PS4", "BASH_ENV", "ENV"];

/// Why setting `name` changes what a command runs; `None` for a harmless variable.
pub fn changes_what_runs(name: &str) -> Option<&'static str> {
    if HARMLESS.contains(&name) {
        return None;
    }
    if let Some((_, why)) = EXACT.iter().find(|(exact, _)| *exact == name) {
        return Some(why);
    }
    PREFIXES
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, why)| *why)
}

/// Why a value given to `name` cannot be judged before it runs, if it cannot: the shell
/// expands it (`PS4='$(…)'`) or runs it (`PROMPT_COMMAND`, an exported function).
pub fn value_runs_later(name: &str, value: Option<&str>) -> Option<String> {
    if name == "PROMPT_COMMAND" {
        return Some("`PROMPT_COMMAND` is a command the shell runs later".to_string());
    }
    if name.starts_with("BASH_FUNC_") {
        return Some(format!(
            "`{name}` exports a shell function, whose body runs later in place of a command"
        ));
    }
    if !EVALUATED.contains(&name) {
        return None;
    }
    match value {
        Some(value) if !value.contains(['$', '`']) => None,
        Some(value) => Some(format!(
            "`{name}` is expanded when the shell uses it, running what `{value}` holds"
        )),
        None => Some(format!(
            "`{name}` is given a value only known when it runs, and the shell expands it"
        )),
    }
}

/// Whether `name` is a valid shell variable name.
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_that_change_what_runs_are_named_and_the_rest_are_harmless() {
        for name in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "BASH_ENV",
            "ENV",
            "SHELLOPTS",
            "BASHOPTS",
            "PS4",
            "PROMPT_COMMAND",
            "IFS",
            "PATH",
            "BASH_FUNC_ls%%",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG",
            "GIT_EXEC_PATH",
            "GIT_SSH",
            "GIT_SSH_COMMAND",
            "GIT_PAGER",
            "GIT_EDITOR",
            "GIT_EXTERNAL_DIFF",
            "GIT_DIR",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "RUSTC_WRAPPER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "HOME",
        ] {
            assert!(changes_what_runs(name).is_some(), "{name}");
        }
        for name in [
            "RUST_LOG",
            "RUST_BACKTRACE",
            "CI",
            "NODE_ENV",
            "DEBUG",
            "FOO",
            "LANG",
            "TZ",
            "GIT_AUTHOR_NAME",
            "CARGO_TERM_COLOR",
            "PYTHONUNBUFFERED",
            "NO_COLOR",
        ] {
            assert_eq!(changes_what_runs(name), None, "{name}");
        }
    }

    #[test]
    fn values_the_shell_expands_later_must_be_plain() {
        assert!(value_runs_later("PS4", Some("+ ")).is_none());
        assert!(value_runs_later("PS4", Some("$(touch x)")).is_some());
        assert!(value_runs_later("BASH_ENV", Some("`id`")).is_some());
        assert!(value_runs_later("BASH_ENV", None).is_some());
        assert!(value_runs_later("PROMPT_COMMAND", Some("ls")).is_some());
        assert!(value_runs_later("BASH_FUNC_ls%%", Some("() { :; }")).is_some());
        assert!(value_runs_later("RUST_LOG", None).is_none());
    }
}
