//! `[keys]`: the user's key bindings as written — an action's name, a chord or a list of
//! chords ("none" or `[]` unbinds), and the line each is on. Only the interface knows the
//! actions and the chords (tui/keymap checks them and reports what is wrong with the
//! file's path and line, at start, without refusing the rest); this layer keeps the text.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `[keys]` as parsed: any names, any values (checked by the interface).
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
pub struct KeysTable {
    table: toml::Table,
    /// The line of each binding, by its dotted name (not a key: read from the text).
    #[serde(skip)]
    lines: BTreeMap<String, usize>,
}

/// One line of `[keys]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyBinding {
    /// The action's name as written ("composer.submit").
    pub action: String,
    /// The chords as written (empty: unbound), or what is wrong with the value.
    pub chords: Result<Vec<String>, String>,
    /// Its line in the config file (1-based), where known.
    pub line: Option<usize>,
}

impl KeysTable {
    /// Note where each binding is written.
    pub fn read_lines(&mut self, text: &str) {
        let Ok(document) = toml_edit::Document::parse(text) else {
            return;
        };
        if let Some(keys) = document.as_item().get("keys") {
            collect_lines(text, "", keys, &mut self.lines);
        }
    }

    /// The bindings in the order they are written (names as dotted paths: an unquoted
    /// `composer.submit = …` is a nested table to TOML).
    pub fn bindings(&self) -> Vec<KeyBinding> {
        let mut bindings = Vec::new();
        flatten("", &self.table, &mut |action, value| {
            bindings.push(KeyBinding {
                line: self.lines.get(&action).copied(),
                chords: chords(value),
                action,
            });
        });
        bindings.sort_by_key(|b| b.line.unwrap_or(usize::MAX));
        bindings
    }
}

fn flatten(prefix: &str, table: &toml::Table, each: &mut dyn FnMut(String, &toml::Value)) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&name, inner, each),
            value => each(name, value),
        }
    }
}

fn chords(value: &toml::Value) -> Result<Vec<String>, String> {
    match value {
        toml::Value::String(text) if text.trim() == "none" => Ok(Vec::new()),
        toml::Value::String(text) => Ok(vec![text.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(text) => Ok(text.clone()),
                other => Err(format!("a chord is a string, not {}", other.type_str())),
            })
            .collect(),
        other => Err(format!(
            "a chord (\"ctrl+r\") or a list of chords, not {}",
            other.type_str()
        )),
    }
}

fn collect_lines(
    text: &str,
    prefix: &str,
    item: &toml_edit::Item,
    lines: &mut BTreeMap<String, usize>,
) {
    let Some(table) = item.as_table_like() else {
        return;
    };
    for (key, value) in table.iter() {
        let name = if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        };
        if value.is_table_like() {
            collect_lines(text, &name, value, lines);
        } else if let Some(span) = value.span() {
            lines.insert(
                name,
                text[..span.start.min(text.len())].matches('\n').count() + 1,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bindings(text: &str) -> Vec<KeyBinding> {
        let mut config = crate::config::file::parse(text).unwrap();
        config.keys.read_lines(text);
        config.keys.bindings()
    }

    #[test]
    fn bindings_keep_their_lines_and_order() {
        let found = bindings(
            "model = \"m\"\n[keys]\n\"composer.submit\" = \"shift+enter\"\ncomposer.newline = [\"enter\", \"ctrl+j\"]\n\"view.agents\" = \"none\"\n\"app.quit\" = []\n\"x.y\" = 3\n",
        );
        let line = |name: &str| found.iter().find(|b| b.action == name).unwrap().line;
        assert_eq!(found[0].action, "composer.submit");
        assert_eq!(found[0].chords, Ok(vec!["shift+enter".to_string()]));
        assert_eq!(line("composer.submit"), Some(3));
        assert_eq!(line("composer.newline"), Some(4));
        assert_eq!(found[1].chords, Ok(vec!["enter".into(), "ctrl+j".into()]));
        assert_eq!(found[2].chords, Ok(Vec::new()));
        assert_eq!(found[3].chords, Ok(Vec::new()));
        assert_eq!(found[4].action, "x.y");
        assert_eq!(found[4].line, Some(7));
        assert!(
            found[4]
                .chords
                .as_ref()
                .is_err_and(|e| e.contains("integer"))
        );
    }
}
