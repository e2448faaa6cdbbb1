//! The names MCP tools are offered under: `mcp__<server>__<tool>`, made of `[A-Za-z0-9_-]`
//! only and at most 64 characters (what every provider accepts). Server prefixes are fixed
//! from the config alone (names that need no change first, then in name order; a clash gets
//! `_2`, `_3`…), so no two servers' tools can collide and nothing depends on which server
//! started first; within a server, tools are named the same way from their own names.

use crate::tools::source::MCP_TOOL_PREFIX;

/// The longest name providers accept for a tool.
pub const MAX_NAME: usize = 64;
/// The longest server part of a name, so every tool keeps room for its own.
const MAX_SERVER_PART: usize = 24;
const SEPARATOR: &str = "__";

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_` (empty → `_`).
pub fn sanitize(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_string()
    } else {
        clean
    }
}

/// `text` cut to `max` characters; when it was longer, its end is replaced by a short hash of
/// the whole, so two long names that share a beginning stay apart.
fn fit(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let hash = format!("{:08x}", fnv1a(text));
    let keep = max.saturating_sub(hash.len() + 1);
    // `text` is ASCII after `sanitize`, so any byte index is a character boundary.
    format!("{}_{hash}", &text[..keep.min(text.len())])
}

/// FNV-1a, 32 bits: a stable hash (the same in every build, unlike std's hasher, whose
/// algorithm may change) in a few lines, so no crate is needed for it.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash: u32, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// `name` if it is not in `taken`, else `name_2`, `name_3`… each cut to `max` characters.
fn unique(name: String, max: usize, taken: &mut Vec<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2u32;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let base = &name[..name.len().min(max.saturating_sub(suffix.len()))];
        candidate = format!("{base}{suffix}");
        n += 1;
    }
    taken.push(candidate.clone());
    candidate
}

/// The name part of each server (config names, in any order), in the same order.
pub fn server_parts(servers: &[&str]) -> Vec<String> {
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by_key(|i| (sanitize(servers[*i]) != servers[*i], servers[*i]));
    let mut parts = vec![String::new(); servers.len()];
    let mut taken = Vec::new();
    for index in order {
        let part = fit(&sanitize(servers[index]), MAX_SERVER_PART);
        parts[index] = unique(part, MAX_SERVER_PART, &mut taken);
    }
    parts
}

/// The offered name of each of a server's tools (its own names, in any order), in the same
/// order.
pub fn tool_names(server_part: &str, tools: &[&str]) -> Vec<String> {
    let prefix = format!("{MCP_TOOL_PREFIX}{server_part}{SEPARATOR}");
    let room = MAX_NAME.saturating_sub(prefix.len());
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by_key(|i| (sanitize(tools[*i]) != tools[*i], tools[*i]));
    let mut names = vec![String::new(); tools.len()];
    let mut taken = Vec::new();
    for index in order {
        let part = unique(fit(&sanitize(tools[index]), room), room, &mut taken);
        names[index] = format!("{prefix}{part}");
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_prefixed_and_short() {
        let parts = server_parts(&["docs", "my server!"]);
        assert_eq!(parts, ["docs", "my_server_"]);
        assert_eq!(
            tool_names("docs", &["search", "get.page", "ünï"]),
            ["mcp__docs__search", "mcp__docs__get_page", "mcp__docs___n_"]
        );
        let long = "x".repeat(100);
        let names = tool_names("docs", &[&long, &format!("{long}y")]);
        assert!(names.iter().all(|n| n.len() <= MAX_NAME), "{names:?}");
        assert_ne!(names[0], names[1]);
        let server = server_parts(&[&"s".repeat(80)]);
        assert_eq!(server[0].len(), MAX_SERVER_PART);
    }

    #[test]
    fn collisions_are_resolved_by_name_order_whatever_the_listing_order() {
        assert_eq!(
            tool_names("s", &["a_b", "a.b", "a-b", "a:b"]),
            [
                "mcp__s__a_b",
                "mcp__s__a_b_2",
                "mcp__s__a-b",
                "mcp__s__a_b_3"
            ]
        );
        assert_eq!(
            tool_names("s", &["a:b", "a-b", "a.b", "a_b"]),
            [
                "mcp__s__a_b_3",
                "mcp__s__a-b",
                "mcp__s__a_b_2",
                "mcp__s__a_b"
            ]
        );
        assert_eq!(server_parts(&["a.b", "a_b"]), ["a_b_2", "a_b"]);
        let crowded: Vec<String> = (0..3).map(|_| "z".repeat(70)).collect();
        let refs: Vec<&str> = crowded.iter().map(String::as_str).collect();
        let names = tool_names("s", &refs);
        assert!(names.iter().all(|n| n.len() <= MAX_NAME), "{names:?}");
        assert_eq!(
            names.iter().collect::<std::collections::HashSet<_>>().len(),
            3
        );
    }
}
