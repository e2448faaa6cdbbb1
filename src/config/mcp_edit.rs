//! Editing `[mcp_servers]` in the user's config text for `agent mcp add|remove` with
//! `toml_edit`, so every comment, blank line and key order the user wrote stays as it was.
//! The edited text is checked like a config file before anyone writes it.

use crate::mcp::config::ServerTable;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

/// A server to add, as given on the command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewServer {
    pub name: String,
    /// A stdio server: the program and its arguments.
    pub command: Vec<String>,
    pub url: Option<String>,
    pub env: Vec<(String, String)>,
    pub bearer_token_env: Option<String>,
}

/// `text` with `server` added as `[mcp_servers.NAME]`; an error if the name is taken or the
/// result would not be a valid config.
pub fn add(text: &str, server: &NewServer) -> Result<String, String> {
    let mut doc = parse(text)?;
    if servers_table(&mut doc)?.contains_key(&server.name) {
        return Err(format!(
            "an MCP server named `{}` is configured already (remove it first: agent mcp remove {})",
            server.name, server.name
        ));
    }
    let mut table = Table::new();
    match (&server.url, server.command.split_first()) {
        (Some(url), None) => {
            table.insert("url", value(url.as_str()));
            if let Some(var) = &server.bearer_token_env {
                table.insert("bearer_token_env", value(var.as_str()));
            }
        }
        (None, Some((program, args))) => {
            table.insert("command", value(program.as_str()));
            if !args.is_empty() {
                let args: Array = args.iter().map(String::as_str).collect();
                table.insert("args", value(args));
            }
            if !server.env.is_empty() {
                let mut env = InlineTable::new();
                for (key, val) in &server.env {
                    env.insert(key, val.as_str().into());
                }
                table.insert("env", value(env));
            }
        }
        (Some(_), Some(_)) => {
            return Err("give either --url or a command after --, not both".into());
        }
        (None, None) => {
            return Err("give the server's command after -- (agent mcp add NAME -- COMMAND ARGS…) or --url URL".into());
        }
    }
    // Comments at the very end of the file (often a commented-out example) stay above the
    // new table instead of being written after it.
    let trailing = doc.trailing().as_str().unwrap_or("").to_string();
    if !trailing.trim().is_empty() {
        table.decor_mut().set_prefix(trailing);
        doc.set_trailing("");
    }
    servers_table(&mut doc)?.insert(&server.name, Item::Table(table));
    let edited = doc.to_string();
    check(&edited, &server.name)?;
    Ok(edited)
}

/// `text` without `[mcp_servers.NAME]`; an error if there is no such server.
pub fn remove(text: &str, name: &str) -> Result<String, String> {
    let mut doc = parse(text)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .and_then(|servers| servers.remove(name));
    let Some(removed) = removed else {
        return Err(format!("no MCP server named `{name}` is configured"));
    };
    // Comments written above the table are the user's, not the server's: they stay, at the
    // end of the file (where `add` found them if it put them there).
    let comments = removed
        .as_table()
        .and_then(|t| t.decor().prefix())
        .and_then(|p| p.as_str())
        .filter(|p| !p.trim().is_empty())
        .map(str::to_string);
    if let Some(comments) = comments {
        let trailing = doc.trailing().as_str().unwrap_or("").to_string();
        doc.set_trailing(format!("{comments}{trailing}"));
    }
    // An `[mcp_servers]` table left empty and never written by the user goes too.
    let empty = doc
        .get("mcp_servers")
        .and_then(Item::as_table)
        .is_some_and(|t| t.is_empty() && t.is_implicit());
    if empty {
        doc.remove("mcp_servers");
    }
    Ok(doc.to_string())
}

/// The configured servers, each checked (name, table).
pub fn list(text: &str) -> Result<Vec<(String, ServerTable)>, String> {
    let file = super::file::parse(text).map_err(|(key, message)| match key {
        Some(key) => format!("`{key}`: {message}"),
        None => message,
    })?;
    Ok(file.mcp_servers.into_iter().collect())
}

fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>()
        .map_err(|e| format!("it is not valid TOML: {}", e.message()))
}

fn servers_table(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    let entry = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    entry
        .as_table_mut()
        .ok_or_else(|| "`mcp_servers` is not a table".to_string())
}

/// The edited text must be a config the agent accepts, with the new server valid.
fn check(text: &str, name: &str) -> Result<(), String> {
    let servers = list(text)?;
    let table = servers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t)
        .ok_or_else(|| "internal error: the server was not added".to_string())?;
    table
        .resolve(name)
        .map(|_| ())
        .map_err(|e| format!("`{}`: {}", e.key, e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "# my settings\nmodel = \"gpt-4.1\" # the best\n\n[limits]\n# keep runs short\nmax_turns = 10\n";

    #[test]
    fn adding_and_removing_keeps_everything_else() {
        let stdio = NewServer {
            name: "files".into(),
            command: vec!["npx".into(), "-y".into(), "@x/server".into()],
            env: vec![("KEY".into(), "v".into())],
            ..NewServer::default()
        };
        let added = add(USER, &stdio).unwrap();
        assert!(added.starts_with(USER), "{added}");
        assert!(
            added.ends_with("[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"@x/server\"]\nenv = { KEY = \"v\" }\n"),
            "{added}"
        );
        let http = NewServer {
            name: "docs".into(),
            url: Some("http://127.0.0.1:3001/mcp".into()),
            bearer_token_env: Some("DOCS_TOKEN".into()),
            ..NewServer::default()
        };
        let both = add(&added, &http).unwrap();
        let servers = list(&both).unwrap();
        assert_eq!(servers.len(), 2);
        assert!(
            add(&both, &http)
                .unwrap_err()
                .contains("configured already")
        );
        let back = remove(&remove(&both, "docs").unwrap(), "files").unwrap();
        assert_eq!(back, USER);
        assert!(
            remove(USER, "files")
                .unwrap_err()
                .contains("no MCP server named `files`")
        );
    }

    #[test]
    fn comments_at_the_end_stay_above_the_new_server_and_survive_its_removal() {
        let text = "model = \"m\"\n\n# [mcp_servers.old]\n# command = \"x\"\n";
        let server = NewServer {
            name: "new".into(),
            command: vec!["srv".into()],
            ..NewServer::default()
        };
        let added = add(text, &server).unwrap();
        assert_eq!(
            added,
            "model = \"m\"\n\n# [mcp_servers.old]\n# command = \"x\"\n[mcp_servers.new]\ncommand = \"srv\"\n"
        );
        assert_eq!(remove(&added, "new").unwrap(), text);
        let only_comment = add("# linked\n", &server).unwrap();
        assert!(
            only_comment.starts_with("# linked\n[mcp_servers.new]"),
            "{only_comment}"
        );
        assert_eq!(remove(&only_comment, "new").unwrap(), "# linked\n");
    }

    #[test]
    fn a_server_that_would_not_be_valid_is_refused() {
        let bad = NewServer {
            name: "x".into(),
            url: Some("ftp://nowhere".into()),
            ..NewServer::default()
        };
        assert!(add("", &bad).unwrap_err().contains("mcp_servers.x.url"));
        let none = NewServer {
            name: "x".into(),
            ..NewServer::default()
        };
        assert!(add("", &none).is_err());
        assert!(add("mcp_servers = 3", &bad).is_err());
        assert!(
            add("model = ", &bad)
                .unwrap_err()
                .contains("not valid TOML")
        );
    }
}
