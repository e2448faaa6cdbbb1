//! `[lsp]` and `[lsp.NAME]` in config.toml: the language servers whose diagnostics follow
//! every edit and whose answers the `lsp` tool gives. The table as written, the built-in
//! definitions (used when their program is on PATH), and the checked form `crate::lsp`
//! starts servers from. Mistakes name the key.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the engine waits after a change for the server's diagnostics of it.
pub const DEFAULT_WAIT: Duration = Duration::from_millis(1500);
/// How long a server may take to answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Diagnostics shown per file in a tool result.
pub const DEFAULT_MAX_DIAGNOSTICS: usize = 20;

/// `[lsp]` as written: its own keys, and a table per server (`[lsp.NAME]`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LspTable {
    pub enabled: Option<bool>,
    pub diagnostics_wait_secs: Option<f64>,
    pub max_diagnostics: Option<usize>,
    /// `[lsp.NAME]`, checked one by one (`ServerTable`) so a mistake names its key.
    #[serde(flatten)]
    pub servers: BTreeMap<String, toml::Value>,
}

/// One `[lsp.NAME]` table, exactly as written.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerTable {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// File name extensions (`rs`, `py`), without the dot.
    pub filetypes: Option<Vec<String>>,
    /// Files or directories that mark a project's root (`Cargo.toml`).
    pub root_markers: Option<Vec<String>>,
    pub initialization_options: Option<toml::Value>,
    /// What the server is told when it asks for its configuration (`workspace/configuration`),
    /// by section (`python.analysis`).
    pub settings: Option<toml::Value>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub enabled: Option<bool>,
    pub startup_timeout_secs: Option<f64>,
}

/// A server, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Lower-case extensions without the dot.
    pub filetypes: Vec<String>,
    pub root_markers: Vec<String>,
    pub initialization_options: Option<serde_json::Value>,
    pub settings: Option<serde_json::Value>,
    pub env: BTreeMap<String, String>,
    pub enabled: bool,
    pub startup_timeout: Duration,
    /// One of the built-in definitions (perhaps adjusted by a table of the same name).
    pub builtin: bool,
    /// Where its program was found (PATH, or the path given); `None`: not installed.
    pub program: Option<PathBuf>,
}

/// `[lsp]`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct LspSettings {
    pub enabled: bool,
    /// How long to wait after a change for its diagnostics.
    pub wait: Duration,
    /// Diagnostics shown per file in a tool result.
    pub max_diagnostics: usize,
    /// Every server configured or built in, in name order (disabled and missing ones
    /// included, for `/lsp`).
    pub servers: Vec<ServerSpec>,
}

impl Default for LspSettings {
    fn default() -> Self {
        LspSettings {
            enabled: false,
            wait: DEFAULT_WAIT,
            max_diagnostics: DEFAULT_MAX_DIAGNOSTICS,
            servers: Vec::new(),
        }
    }
}

impl LspSettings {
    /// The servers that can run: enabled, with their program found.
    pub fn usable(&self) -> impl Iterator<Item = &ServerSpec> {
        self.servers
            .iter()
            .filter(|s| self.enabled && s.enabled && s.program.is_some())
    }
}

struct Builtin {
    name: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    filetypes: &'static [&'static str],
    root_markers: &'static [&'static str],
}

/// The servers known without configuration, used when their program is on PATH. For a
/// file type several of them serve, the first one found wins (basedpyright before
/// pyright); a configured server of a file type replaces them all for it.
const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "rust-analyzer",
        command: "rust-analyzer",
        args: &[],
        filetypes: &["rs"],
        root_markers: &["Cargo.toml", "rust-project.json"],
    },
    Builtin {
        name: "basedpyright",
        command: "basedpyright-langserver",
        args: &["--stdio"],
        filetypes: &["py", "pyi"],
        root_markers: &[
            "pyproject.toml",
            "pyrightconfig.json",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    },
    Builtin {
        name: "pyright",
        command: "pyright-langserver",
        args: &["--stdio"],
        filetypes: &["py", "pyi"],
        root_markers: &[
            "pyproject.toml",
            "pyrightconfig.json",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    },
    Builtin {
        name: "typescript-language-server",
        command: "typescript-language-server",
        args: &["--stdio"],
        filetypes: &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        root_markers: &["tsconfig.json", "jsconfig.json", "package.json"],
    },
    Builtin {
        name: "gopls",
        command: "gopls",
        args: &[],
        filetypes: &["go"],
        root_markers: &["go.work", "go.mod"],
    },
    Builtin {
        name: "clangd",
        command: "clangd",
        args: &[],
        filetypes: &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm"],
        root_markers: &["compile_commands.json", "compile_flags.txt", ".clangd"],
    },
];

/// Resolve `[lsp]`: `Err((key, why))` for a mistake. Programs are looked up on `path_var`
/// (PATH), relative commands against `cwd`.
pub fn resolve(
    table: &LspTable,
    path_var: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> Result<LspSettings, (String, String)> {
    let wait = match table.diagnostics_wait_secs {
        None => DEFAULT_WAIT,
        Some(secs) => seconds(secs, true)
            .ok_or_else(|| ("lsp.diagnostics_wait_secs".to_string(), bad_seconds(secs)))?,
    };
    let max_diagnostics = match table.max_diagnostics {
        Some(0) => {
            return Err((
                "lsp.max_diagnostics".to_string(),
                "must be at least 1".to_string(),
            ));
        }
        Some(n) => n,
        None => DEFAULT_MAX_DIAGNOSTICS,
    };
    let mut servers = Vec::new();
    for (name, value) in &table.servers {
        let key = |field: &str| format!("lsp.{name}.{field}");
        let written: ServerTable = value.clone().try_into().map_err(|e: toml::de::Error| {
            (
                format!("lsp.{name}"),
                e.message().trim_end().replace('\n', " "),
            )
        })?;
        let builtin = BUILTINS.iter().find(|b| b.name == name);
        servers.push(server(name, &written, builtin, &key)?);
    }
    for builtin in BUILTINS {
        if !table.servers.contains_key(builtin.name) {
            let key = |field: &str| format!("lsp.{}.{field}", builtin.name);
            servers.push(server(
                builtin.name,
                &ServerTable::default(),
                Some(builtin),
                &key,
            )?);
        }
    }
    for spec in &mut servers {
        spec.program = find_program(&spec.command, path_var, cwd);
    }
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(LspSettings {
        enabled: table.enabled.unwrap_or(true),
        wait,
        max_diagnostics,
        servers,
    })
}

fn server(
    name: &str,
    table: &ServerTable,
    builtin: Option<&Builtin>,
    key: &dyn Fn(&str) -> String,
) -> Result<ServerSpec, (String, String)> {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let command = match (&table.command, builtin) {
        (Some(command), _) if command.trim().is_empty() => {
            return Err((key("command"), "is empty".to_string()));
        }
        (Some(command), _) => command.clone(),
        (None, Some(builtin)) => builtin.command.to_string(),
        (None, None) => {
            return Err((
                format!("lsp.{name}"),
                "set `command` (a program speaking the language server protocol on stdio) and \
                 `filetypes`"
                    .to_string(),
            ));
        }
    };
    let filetypes: Vec<String> = match (&table.filetypes, builtin) {
        (Some(list), _) => list
            .iter()
            .map(|t| t.trim().trim_start_matches('.').to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect(),
        (None, Some(builtin)) => owned(builtin.filetypes),
        (None, None) => Vec::new(),
    };
    if filetypes.is_empty() {
        return Err((
            key("filetypes"),
            "name at least one file name extension the server is for, e.g. [\"py\"]".to_string(),
        ));
    }
    let startup_timeout = match table.startup_timeout_secs {
        None => DEFAULT_STARTUP_TIMEOUT,
        Some(secs) => {
            seconds(secs, false).ok_or_else(|| (key("startup_timeout_secs"), bad_seconds(secs)))?
        }
    };
    let json = |value: &Option<toml::Value>, field: &str| {
        value
            .as_ref()
            .map(|v| serde_json::to_value(v).map_err(|e| (key(field), e.to_string())))
            .transpose()
    };
    Ok(ServerSpec {
        name: name.to_string(),
        command,
        args: match (&table.args, builtin) {
            (Some(args), _) => args.clone(),
            (None, Some(builtin)) => owned(builtin.args),
            (None, None) => Vec::new(),
        },
        filetypes,
        root_markers: match (&table.root_markers, builtin) {
            (Some(markers), _) => markers.clone(),
            (None, Some(builtin)) => owned(builtin.root_markers),
            (None, None) => Vec::new(),
        },
        initialization_options: json(&table.initialization_options, "initialization_options")?,
        settings: json(&table.settings, "settings")?,
        env: table.env.clone(),
        enabled: table.enabled.unwrap_or(true),
        startup_timeout,
        builtin: builtin.is_some(),
        program: None,
    })
}

/// A positive number of seconds (zero allowed when `zero_ok`).
fn seconds(secs: f64, zero_ok: bool) -> Option<Duration> {
    if secs < 0.0 || (!zero_ok && secs == 0.0) {
        return None;
    }
    Duration::try_from_secs_f64(secs).ok()
}

fn bad_seconds(secs: f64) -> String {
    format!("{secs} is not a usable number of seconds")
}

/// Where `command` is: a path (with a `/`) as given, relative to `cwd`; a bare name on
/// `path_var`. Only executable files count.
pub fn find_program(
    command: &str,
    path_var: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = cwd.join(command);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(path_var?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(command))
        .find(|path| executable(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> LspTable {
        #[derive(Deserialize)]
        struct Top {
            lsp: LspTable,
        }
        toml::from_str::<Top>(text).unwrap().lsp
    }

    #[test]
    fn builtins_are_there_and_found_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("gopls");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let settings = resolve(
            &LspTable::default(),
            Some(dir.path().as_os_str()),
            dir.path(),
        )
        .unwrap();
        assert!(settings.enabled);
        assert_eq!(settings.wait, DEFAULT_WAIT);
        let usable: Vec<&str> = settings.usable().map(|s| s.name.as_str()).collect();
        assert_eq!(usable, ["gopls"]);
        assert_eq!(settings.servers.len(), BUILTINS.len());
    }

    #[test]
    fn a_table_adjusts_a_builtin_or_defines_a_server() {
        let table = parse(
            "[lsp]\ndiagnostics_wait_secs = 0.5\n\
             [lsp.pyright]\nenabled = false\n\
             [lsp.mine]\ncommand = \"/bin/sh\"\nfiletypes = [\".XY\"]\n\
             initialization_options = { a = 1 }\nenv = { K = \"v\" }\n",
        );
        let settings = resolve(&table, None, Path::new("/")).unwrap();
        assert_eq!(settings.wait, Duration::from_millis(500));
        let pyright = settings
            .servers
            .iter()
            .find(|s| s.name == "pyright")
            .unwrap();
        assert!(!pyright.enabled && pyright.builtin);
        assert_eq!(pyright.args, ["--stdio"]);
        let mine = settings.servers.iter().find(|s| s.name == "mine").unwrap();
        assert_eq!(mine.filetypes, ["xy"]);
        assert_eq!(
            mine.initialization_options,
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(mine.program.as_deref(), Some(Path::new("/bin/sh")));
        assert_eq!(mine.env.get("K").map(String::as_str), Some("v"));
        let off = resolve(&parse("[lsp]\nenabled = false\n"), None, Path::new("/")).unwrap();
        assert_eq!(off.usable().count(), 0);
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            ("[lsp.x]\nfiletypes = [\"x\"]\n", "lsp.x"),
            ("[lsp.x]\ncommand = \"x\"\n", "lsp.x.filetypes"),
            (
                "[lsp.x]\ncommand = \"\"\nfiletypes = [\"x\"]\n",
                "lsp.x.command",
            ),
            ("[lsp.x]\ncomand = \"x\"\n", "lsp.x"),
            ("[lsp]\nmax_diagnostics = 0\n", "lsp.max_diagnostics"),
            (
                "[lsp]\ndiagnostics_wait_secs = -1\n",
                "lsp.diagnostics_wait_secs",
            ),
            (
                "[lsp.gopls]\nstartup_timeout_secs = 0\n",
                "lsp.gopls.startup_timeout_secs",
            ),
        ];
        for (text, key) in cases {
            let (got, why) = resolve(&parse(text), None, Path::new("/")).unwrap_err();
            assert_eq!(got, key, "{text}: {why}");
        }
        let (_, why) =
            resolve(&parse("[lsp.x]\ncomand = \"x\"\n"), None, Path::new("/")).unwrap_err();
        assert!(why.contains("comand"), "{why}");
    }
}
