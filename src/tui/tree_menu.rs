//! The `/tree` menu: a session's user messages laid out as a tree (connectors where
//! branches part, the current branch marked), each row switching to the tip of its branch.

use super::views::menu::{Choice, Menu, MenuItem};
use crate::session::tree::{SessionTree, TreeNode};
use std::collections::HashMap;

/// The menu for `tree`, opened on the current head; `None` when it has no user message.
pub fn tree_menu(tree: &SessionTree) -> Option<Menu> {
    let nodes = &tree.nodes;
    let children = children_of(nodes);
    let user_kids = user_message_tree(nodes);
    let head = nodes.iter().rposition(|n| n.current && n.role == "user");
    let mut items = Vec::new();
    let mut selected = None;
    // Depth first, siblings in the order written: (message, the columns before its
    // connector, its connector).
    let mut stack: Vec<(usize, String, &'static str)> = Vec::new();
    hang(
        &mut stack,
        user_kids.get(&None).map_or(&[], Vec::as_slice),
        "",
    );
    while let Some((i, prefix, connector)) = stack.pop() {
        let node = &nodes[i];
        let marker = if node.current { "● " } else { "○ " };
        let below = user_kids.get(&Some(i)).map_or(&[][..], Vec::as_slice);
        let mut item = MenuItem::new(
            format!("{prefix}{connector}{marker}{}", node.text),
            Choice::SwitchTo {
                entry: tip(nodes, &children, i),
                preview: super::cells::cut(&node.text, 40),
            },
        );
        if below.len() > 1 {
            item = item.note(format!("⑂ {} branches", below.len()));
        } else if head == Some(i) {
            item = item.note("(current)");
        }
        if head == Some(i) {
            selected = Some(items.len());
        }
        items.push(item);
        let continued = match connector {
            "├─ " => "│  ",
            "└─ " => "   ",
            _ => "",
        };
        hang(&mut stack, below, &format!("{prefix}{continued}"));
    }
    if items.is_empty() {
        return None;
    }
    let branches = (0..nodes.len())
        .filter(|&i| !children.contains_key(&Some(nodes[i].id.as_str())))
        .count();
    let mut menu = Menu::new(
        format!("Branches of this session ({branches}; ● the current one)"),
        items,
    );
    menu.selected = selected.unwrap_or(0);
    Some(menu)
}

/// Each entry's children (by index), keyed by the parent's id (`None`: the roots).
fn children_of(nodes: &[TreeNode]) -> HashMap<Option<&str>, Vec<usize>> {
    let mut children: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        children
            .entry(node.parent_id.as_deref())
            .or_default()
            .push(i);
    }
    children
}

/// The last entry of the branch through `i`: the current branch where it goes on, else the
/// latest one written.
fn tip(nodes: &[TreeNode], children: &HashMap<Option<&str>, Vec<usize>>, mut i: usize) -> String {
    while let Some(next) = children.get(&Some(nodes[i].id.as_str())).and_then(|c| {
        c.iter()
            .copied()
            .find(|&k| nodes[k].current)
            .or_else(|| c.last().copied())
    }) {
        i = next;
    }
    nodes[i].id.clone()
}

/// The tree of user messages: each one under its nearest user message before it.
fn user_message_tree(nodes: &[TreeNode]) -> HashMap<Option<usize>, Vec<usize>> {
    let by_id: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let parent_of = |i: usize| {
        nodes[i]
            .parent_id
            .as_deref()
            .and_then(|p| by_id.get(p).copied())
    };
    let mut user_kids: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, _) in nodes.iter().enumerate().filter(|(_, n)| n.role == "user") {
        let mut parent = parent_of(i);
        while let Some(p) = parent.filter(|&p| nodes[p].role != "user") {
            parent = parent_of(p);
        }
        user_kids.entry(parent).or_default().push(i);
    }
    user_kids
}

/// Put `list` (siblings) on the depth-first stack under `prefix`: a lone child continues
/// its parent's column, several get connectors.
fn hang(stack: &mut Vec<(usize, String, &'static str)>, list: &[usize], prefix: &str) {
    if let [only] = list {
        stack.push((*only, prefix.to_string(), ""));
        return;
    }
    for (k, &child) in list.iter().enumerate().rev() {
        let connector = if k + 1 == list.len() {
            "└─ "
        } else {
            "├─ "
        };
        stack.push((child, prefix.to_string(), connector));
    }
}
