//! What the `/permissions` view and RPC `get_permissions` show — the mode, the sandbox,
//! every rule with the file and line it came from, the session grants — and the changes
//! they make: revoking a grant, adding a rule for the rest of the session (the front end
//! writes it to the config too).

use super::Agent;
use super::state::lock;
use crate::sandbox::Status;
use crate::tools::rules::{Rule, RuleKind};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsView {
    /// `ask`, `auto` or `read-only`.
    pub mode: &'static str,
    pub sandbox: SandboxView,
    pub rules: Vec<RuleView>,
    /// As shown (`bash: ls -la`), in the order `revoke_grant` counts them.
    pub session_grants: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxView {
    /// `off`, `read-only` or `workspace-write`.
    pub mode: &'static str,
    /// `enforced`, `off` or `unavailable`.
    pub status: &'static str,
    /// Why it is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub network: bool,
    /// `[sandbox] allow_hosts` while the network is off: the hosts commands reach through
    /// the egress proxy (empty: none).
    pub allow_hosts: Vec<String>,
    /// `[sandbox] allow_local_binding` in force: `true` (commands share the session's
    /// loopback), `false`, or `"unavailable"` when this machine would not make the
    /// session's namespace (then commands have the unix-only filter).
    pub local_binding: serde_json::Value,
    pub writable_roots: Vec<String>,
    /// Paths that stay read-only inside the writable roots.
    pub read_only: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    /// `allow`, `ask` or `deny`.
    pub kind: &'static str,
    pub rule: String,
    /// `FILE:LINE`, or null for a rule added in this session.
    pub source: Option<String>,
}

impl Agent {
    /// The permissions in force now.
    pub fn permissions(&self) -> PermissionsView {
        let settings = self.shared.settings();
        let sandbox = &settings.tool_settings.sandbox;
        let state = lock(&self.shared.state);
        let permissions = &state.permissions;
        let (status, reason) = match permissions.sandbox() {
            Status::Off => ("off", None),
            Status::Enforced => ("enforced", None),
            Status::Unavailable(why) => ("unavailable", Some(why.clone())),
        };
        let policy = sandbox.command_policy(&settings.cwd);
        let policy = policy.as_ref();
        let local_binding = match (
            policy.is_some_and(|p| p.local_binding),
            state.session_net.state(),
        ) {
            (false, _) => serde_json::Value::Bool(false),
            (true, crate::tools::process::session_net::NetState::Unavailable(_)) => {
                serde_json::Value::from("unavailable")
            }
            // Refused at start already: no command will get it either.
            (true, _) if sandbox.loopback_refused.is_some() => {
                serde_json::Value::from("unavailable")
            }
            (true, _) => serde_json::Value::Bool(true),
        };
        let paths = |list: Option<&Vec<std::path::PathBuf>>| -> Vec<String> {
            list.into_iter()
                .flatten()
                .map(|p| p.display().to_string())
                .collect()
        };
        PermissionsView {
            mode: permissions.mode.as_str(),
            sandbox: SandboxView {
                mode: sandbox.mode.as_str(),
                status,
                reason,
                network: policy.is_none_or(|p| p.network),
                allow_hosts: policy
                    .filter(|p| p.egress_bridge())
                    .map(|p| p.allow_hosts.iter().map(ToString::to_string).collect())
                    .unwrap_or_default(),
                local_binding,
                writable_roots: paths(policy.map(|p| &p.writable)),
                read_only: policy
                    .and_then(|p| p.guards.as_ref())
                    .map(|g| {
                        g.read_only
                            .iter()
                            .map(|g| g.path.display().to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            rules: permissions
                .rules()
                .all()
                .map(|(kind, rule)| RuleView {
                    kind: kind.as_str(),
                    rule: rule.text().to_string(),
                    source: rule.source().map(str::to_string),
                })
                .collect(),
            session_grants: permissions.session_grants(),
        }
    }

    /// Take back session grant `index` (0-based, as `permissions` lists them); what it was.
    pub fn revoke_grant(&self, index: usize) -> Option<String> {
        lock(&self.shared.state).permissions.revoke_grant(index)
    }

    /// Parse `text` as a rule and add it to the `kind` list for the rest of the session.
    pub fn add_rule(&self, kind: RuleKind, text: &str) -> Result<(), String> {
        let mut state = lock(&self.shared.state);
        let rule = Rule::parse(text, state.permissions.cwd())?;
        state.permissions.add_rule(kind, rule);
        Ok(())
    }
}
