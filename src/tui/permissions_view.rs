//! `/permissions`: what decides whether a call runs, as transcript rows — the mode, the
//! sandbox, every rule with the file and line it came from, the session grants (numbered,
//! for `/permissions revoke N`) — and the two changes the view makes: revoking a grant and
//! adding a rule (for this session at once, and written to the config file with its
//! comments kept).

use super::app::App;
use super::cells;
use super::theme::Theme;
use crate::agent::permissions::PermissionsView;
use crate::tools::rules::RuleKind;
use ratatui::text::{Line, Span};

pub fn rows(view: &PermissionsView, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let room = usize::from(width).saturating_sub(6).max(20);
    let mut rows = vec![
        cells::blank(),
        Line::from(Span::styled("Permissions", theme.bold())),
        Line::from(vec![
            Span::styled("  mode     ", theme.dim()),
            Span::raw(view.mode.to_string()),
        ]),
    ];
    let sandbox = &view.sandbox;
    let status = sandbox_status(sandbox);
    rows.push(Line::from(vec![
        Span::styled("  sandbox  ", theme.dim()),
        Span::raw(cells::cut(&status, room)),
    ]));
    if !sandbox.read_only.is_empty() {
        rows.push(Line::from(Span::styled(
            cells::cut(
                &format!("           read-only: {}", sandbox.read_only.join(", ")),
                room,
            ),
            theme.dim(),
        )));
    }
    rows.push(Line::from(Span::styled("  rules", theme.dim())));
    if view.rules.is_empty() {
        rows.push(Line::from(Span::styled(
            "    none — add one with /permissions allow|ask|deny RULE",
            theme.dim(),
        )));
    }
    for rule in &view.rules {
        let source = rule.source.as_deref().unwrap_or("added in this session");
        rows.push(Line::from(vec![
            Span::styled(format!("    {:<6}", rule.kind), theme.accent()),
            Span::raw(cells::cut(&rule.rule, room / 2)),
            Span::styled(format!("  {}", cells::cut(source, room / 2)), theme.dim()),
        ]));
    }
    rows.push(Line::from(Span::styled("  session grants", theme.dim())));
    if view.session_grants.is_empty() {
        rows.push(Line::from(Span::styled(
            "    none (\"allow for this session\" in an approval adds one)",
            theme.dim(),
        )));
    }
    for (i, grant) in view.session_grants.iter().enumerate() {
        rows.push(Line::from(vec![
            Span::styled(format!("    {}. ", i + 1), theme.accent()),
            Span::raw(cells::cut(grant, room)),
        ]));
    }
    rows.push(Line::from(Span::styled(
        "  /permissions revoke N · /permissions allow|ask|deny RULE",
        theme.dim(),
    )));
    rows
}

/// The sandbox in one line: whether it holds, its network and where commands may write.
fn sandbox_status(sandbox: &crate::agent::permissions::SandboxView) -> String {
    match (sandbox.status, &sandbox.reason) {
        ("unavailable", Some(reason)) => format!("unavailable: {reason} (commands ask first)"),
        ("enforced", _) => {
            let network = if sandbox.network {
                "network on".to_string()
            } else if !sandbox.allow_hosts.is_empty() {
                format!("network only to {} (proxy)", sandbox.allow_hosts.join(", "))
            } else if sandbox.local_binding == serde_json::Value::Bool(true) {
                "network off but the session's own loopback (listeners allowed)".to_string()
            } else if sandbox.local_binding == "unavailable" {
                "network off (loopback listeners unavailable on this machine)".to_string()
            } else {
                "network off".to_string()
            };
            if sandbox.writable_roots.is_empty() {
                format!("{} · {network} · no writes", sandbox.mode)
            } else {
                format!(
                    "{} · {network} · writes under {}",
                    sandbox.mode,
                    sandbox.writable_roots.join(", ")
                )
            }
        }
        _ => "off (commands run with everything you may do)".to_string(),
    }
}

impl App {
    /// `/permissions [revoke N | allow|ask|deny RULE]`.
    pub fn permissions_command(&mut self, arg: &str) {
        let Some(agent) = self.agent.local().cloned() else {
            return self.warning(crate::live::link::OWNER_ONLY);
        };
        let (verb, rest) = match arg.split_once(char::is_whitespace) {
            Some((verb, rest)) => (verb, rest.trim()),
            None => (arg, ""),
        };
        let kind = match verb {
            "" => {
                let rows = rows(&agent.permissions(), self.width, &self.theme);
                self.push_rows(rows);
                return;
            }
            "revoke" => {
                let revoked = rest
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|index| agent.revoke_grant(index));
                match revoked {
                    Some(grant) => self.notice(&format!("Revoked the session grant {grant}")),
                    None => self.warning(
                        "No such session grant: /permissions lists them with their numbers",
                    ),
                }
                return;
            }
            "allow" => RuleKind::Allow,
            "ask" => RuleKind::Ask,
            "deny" => RuleKind::Deny,
            other => {
                self.warning(&format!(
                    "/permissions {other}: use revoke N, or allow|ask|deny RULE"
                ));
                return;
            }
        };
        if rest.is_empty() {
            self.warning(&format!(
                "/permissions {verb} needs a rule, e.g. bash(git status*)"
            ));
            return;
        }
        if let Err(e) = agent.add_rule(kind, rest) {
            self.warning(&format!("Not a rule: {e}"));
            return;
        }
        let path = self.settings.config_path.clone();
        let written = crate::mcp_command::edit(&path, |text| {
            crate::config::permissions_edit::add_rule(text, kind, rest)
        });
        match written {
            Ok(()) => self.notice(&format!(
                "Added {} rule {rest}, now and in {}",
                kind.as_str(),
                path.display()
            )),
            Err(e) => self.warning(&format!(
                "Added {} rule {rest} for this session, but could not write it to the config: {e}",
                kind.as_str()
            )),
        }
    }
}
