//! Every palette this process can show: the built-in ones and the user's theme files
//! (`$AGENT_HOME/themes/*.toml`), read once at start. A `Theme` holds a `&'static Palette` so it
//! stays `Copy` and switching themes is a pointer change; the user's palettes are leaked once
//! for that, a bounded allocation made only at start-up.

use super::palette::{self, BUILTIN, Palette};
use std::path::Path;
use std::sync::OnceLock;

pub struct Themes {
    palettes: Vec<&'static Palette>,
    /// What was wrong with theme files (each names its file and line).
    pub problems: Vec<String>,
}

impl Themes {
    /// The built-in palettes, then the user's (in name order). A user file with a built-in's
    /// name replaces it; a file that does not parse is left out and reported.
    pub fn load(dir: &Path) -> Themes {
        let mut palettes: Vec<&'static Palette> = BUILTIN.to_vec();
        let mut problems = Vec::new();
        let mut files: Vec<_> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                problems.push(format!("Cannot read the themes in {}: {e}", dir.display()));
                Vec::new()
            }
        };
        files.sort();
        for path in files {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let parsed = std::fs::read_to_string(&path)
                .map_err(|e| format!("theme {}: {e}", path.display()))
                .and_then(|text| palette::parse(name, &text, &path).map_err(|e| e.to_string()));
            match parsed {
                Ok(palette) => {
                    let palette: &'static Palette = Box::leak(Box::new(palette));
                    match palettes.iter_mut().find(|p| p.name == palette.name) {
                        Some(slot) => *slot = palette,
                        None => palettes.push(palette),
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
        Themes { palettes, problems }
    }

    pub fn get(&self, name: &str) -> Option<&'static Palette> {
        self.palettes.iter().copied().find(|p| p.name == name)
    }

    pub fn all(&self) -> &[&'static Palette] {
        &self.palettes
    }

    pub fn names(&self) -> Vec<&str> {
        self.palettes.iter().map(|p| p.name.as_ref()).collect()
    }
}

static INSTALLED: OnceLock<Themes> = OnceLock::new();

/// The themes of this process, read from `dir` the first time (later calls return the same).
pub fn install(dir: &Path) -> &'static Themes {
    INSTALLED.get_or_init(|| Themes::load(dir))
}

/// The themes read at start, or the built-in ones if none were.
pub fn installed() -> &'static Themes {
    INSTALLED.get_or_init(|| Themes {
        palettes: BUILTIN.to_vec(),
        problems: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    #[test]
    fn user_files_join_the_builtins_and_broken_ones_are_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("ocean.toml"), "accent = \"#0000ff\"\n").expect("write");
        std::fs::write(dir.path().join("dark.toml"), "accent = \"green\"\n").expect("write");
        std::fs::write(dir.path().join("broken.toml"), "accent = \"nope\"\n").expect("write");
        std::fs::write(dir.path().join("notes.txt"), "not a theme").expect("write");
        let themes = Themes::load(dir.path());
        assert_eq!(
            themes.names(),
            ["dark", "light", "high-contrast", "ocean"],
            "built-ins first, a user's dark replacing the built-in"
        );
        assert_eq!(
            themes.get("ocean").map(|p| p.accent),
            Some(Color::Rgb(0, 0, 0xff))
        );
        assert_eq!(themes.get("dark").map(|p| p.accent), Some(Color::Green));
        assert_eq!(themes.problems.len(), 1, "{:?}", themes.problems);
        assert!(themes.problems[0].contains("broken.toml"));
        assert!(themes.problems[0].contains("line 1"));
    }

    #[test]
    fn a_missing_directory_is_just_the_builtins() {
        let themes = Themes::load(Path::new("/nonexistent/agent/themes"));
        assert_eq!(themes.names(), ["dark", "light", "high-contrast"]);
        assert!(themes.problems.is_empty());
    }
}
