//! Adding a rule to `[permissions]` in the user's config text for the `/permissions` view,
//! with `toml_edit`, so every comment, blank line and key order the user wrote stays as it
//! was. The edited text is checked like a config file before anyone writes it.

use crate::tools::rules::RuleKind;
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// `text` with `rule` appended to `[permissions] KIND`; an error if the result would not
/// be a config the agent accepts.
pub fn add_rule(text: &str, kind: RuleKind, rule: &str) -> Result<String, String> {
    let mut doc = text
        .parse::<DocumentMut>()
        .map_err(|e| format!("it is not valid TOML: {}", e.message()))?;
    let permissions = doc.entry("permissions").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(false);
        Item::Table(table)
    });
    let table = permissions
        .as_table_like_mut()
        .ok_or_else(|| "`permissions` is not a table".to_string())?;
    let list = table
        .entry(kind.as_str())
        .or_insert_with(|| value(Array::new()));
    let array = list
        .as_array_mut()
        .ok_or_else(|| format!("`permissions.{}` is not a list", kind.as_str()))?;
    array.push(rule);
    let edited = doc.to_string();
    super::file::parse(&edited).map_err(|(key, message)| match key {
        Some(key) => format!("`{key}`: {message}"),
        None => message,
    })?;
    Ok(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_appended_and_comments_stay() {
        let text = "# my config\nmodel = \"x\" # the model\n\n[permissions]\n# safe ones\nallow = [\"read\"]\n";
        let edited = add_rule(text, RuleKind::Allow, "bash(git status*)").unwrap();
        assert!(
            edited.starts_with("# my config\nmodel = \"x\" # the model\n"),
            "{edited}"
        );
        assert!(edited.contains("# safe ones\n"), "{edited}");
        assert!(
            edited.contains("allow = [\"read\", \"bash(git status*)\"]"),
            "{edited}"
        );
        let edited = add_rule("", RuleKind::Deny, "bash(rm -rf *)").unwrap();
        assert_eq!(edited, "[permissions]\ndeny = [\"bash(rm -rf *)\"]\n");
        assert!(add_rule("permissions = 1", RuleKind::Ask, "bash").is_err());
    }
}
