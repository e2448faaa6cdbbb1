//! Approvals: a call that needs one becomes `session/request_permission`, with the call
//! shown as the interface's dialog shows it (why it asks; for a change to a file, the diff
//! it would make) and the options `allow_once`, `allow_always` (the engine's suggested allow
//! rules, `Always allow bash(npm test*) in this session`, or this exact call when it has
//! none), `reject_once` and `reject_always` (every call of the tool, for the session).
//! The answer goes to the engine as the dialog's would; a cancelled or failed request is a
//! denial.

use super::link::Link;
use super::tool_view;
use crate::agent::commands::Control;
use crate::agent::{Agent, Approval};
use crate::protocol::command::Command;
use crate::protocol::event::ApprovalPreview;
use agent_client_protocol::RequestCancellationHandle;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The calls waiting for approval, by tool call id, with their request to the editor once
/// it is sent. The event pump adds a call when the engine asks and takes it out when its
/// result arrives (withdrawing the request if the editor still shows it): all under this
/// lock, so a request is never sent, nor a call shown running, after the call ended.
#[derive(Clone, Default)]
pub struct Asking(Arc<Mutex<HashMap<String, Option<RequestCancellationHandle>>>>);

type Requests = HashMap<String, Option<RequestCancellationHandle>>;

impl Asking {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The engine asks about this call.
    pub fn begin(&self, tool_call_id: &str) {
        self.lock().insert(tool_call_id.to_string(), None);
    }

    /// The call ended: withdraw its request if the editor still shows it, then `then`
    /// (sending the call's last update) while no answer can be acted on.
    pub fn ended(&self, tool_call_id: &str, then: impl FnOnce()) {
        let mut asking = self.lock();
        if let Some(Some(handle)) = asking.remove(tool_call_id)
            && let Err(error) = handle.cancel()
        {
            tracing::debug!(%error, "a permission request could not be withdrawn");
        }
        then();
    }
}

/// A call waiting for approval.
pub struct Request {
    /// The engine's id of the call (what `approve` takes).
    pub tool_call_id: String,
    /// The id the editor knows the call by (a sub-agent's calls have their own).
    pub shown_id: String,
    /// The sub-agent that asked (its request relayed), if not the session's agent.
    pub agent_id: Option<String>,
    pub tool_name: String,
    pub args: Value,
    pub reason: String,
    pub cwd: PathBuf,
    /// What the engine previewed of the call.
    pub preview: ApprovalPreview,
    /// The allow rules "always allow" adds for the session, when the engine could write
    /// some; otherwise it allows the exact call again.
    pub suggested_rule: Option<String>,
}

/// Ask the editor, and hand its answer to the engine.
pub async fn ask(link: Arc<Link>, agent: Arc<Agent>, asking: Asking, request: Request) {
    let preview = preview_blocks(&request.preview);
    let mut content = vec![ToolCallContent::from(format!(
        "Needs approval: {}.",
        request.reason
    ))];
    content.extend(preview);
    let call = ToolCallUpdate::new(
        request.shown_id.clone(),
        ToolCallUpdateFields::new()
            .title(tool_view::title(&request.tool_name, &request.args))
            .kind(tool_view::kind(&request.tool_name))
            .status(ToolCallStatus::Pending)
            .raw_input(request.args.clone())
            .locations(tool_view::locations(
                &request.tool_name,
                &request.args,
                None,
                &request.cwd,
            ))
            .content(content),
    );
    let options = vec![
        PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            "allow_always",
            match &request.suggested_rule {
                Some(rule) => format!("Always allow {rule} in this session"),
                None => "Always allow this exact call in this session".to_string(),
            },
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            "reject_always",
            format!("Always reject `{}` in this session", request.tool_name),
            PermissionOptionKind::RejectAlways,
        ),
    ];
    let sent = {
        let mut waiting = asking.lock();
        let Some(handle) = waiting.get_mut(&request.shown_id) else {
            // The call ended before it could be asked about.
            return;
        };
        let sent = link.cx.send_request(RequestPermissionRequest::new(
            link.id.clone(),
            call,
            options,
        ));
        *handle = Some(sent.cancellation_handle());
        sent
    };
    let decision = match sent.block_task().await {
        Ok(response) => decision(&response.outcome, request.suggested_rule.as_deref()),
        Err(error) => {
            tracing::info!(%error, "the permission request failed; denying the call");
            Approval::Deny(None)
        }
    };
    {
        let mut asking = asking.lock();
        if asking.remove(&request.shown_id).is_none() {
            // The call ended meanwhile (the run was stopped): nothing waits for the answer.
            return;
        }
        if matches!(
            decision,
            Approval::Allow | Approval::AllowSession | Approval::AllowRule(_)
        ) {
            link.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                request.shown_id.clone(),
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )));
        }
    }
    let approve = Command::Approve {
        tool_call_id: request.tool_call_id,
        agent_id: request.agent_id,
        decision,
    };
    if let Err(error) = agent.execute(approve, Control::new()).await {
        tracing::debug!(%error, "an approval came too late");
    }
}

/// What the editor's answer means to the engine: "always allow" adds the suggested rules
/// when there are some.
fn decision(outcome: &RequestPermissionOutcome, suggested_rule: Option<&str>) -> Approval {
    let RequestPermissionOutcome::Selected(selected) = outcome else {
        return Approval::Deny(None);
    };
    match selected.option_id.to_string().as_str() {
        "allow_once" => Approval::Allow,
        "allow_always" => match suggested_rule {
            Some(rule) => Approval::AllowRule(rule.to_string()),
            None => Approval::AllowSession,
        },
        "reject_always" => Approval::DenySession,
        _ => Approval::Deny(None),
    }
}

/// What the engine previewed of the call (`tool_approval_request.preview`): the diff a
/// change to a file would make, or why it cannot be shown.
fn preview_blocks(preview: &ApprovalPreview) -> Vec<ToolCallContent> {
    match preview {
        ApprovalPreview::Diff { file, diff, .. } => tool_view::diff_blocks(file, diff),
        ApprovalPreview::Unavailable { why, .. } => {
            vec![ToolCallContent::from(format!("No preview: {why}."))]
        }
        ApprovalPreview::Command { .. } | ApprovalPreview::None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    #[test]
    fn each_option_means_what_the_dialog_key_means() {
        let selected = |id: &str| {
            decision(
                &RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string())),
                None,
            )
        };
        assert_eq!(selected("allow_once"), Approval::Allow);
        assert_eq!(selected("allow_always"), Approval::AllowSession);
        assert_eq!(selected("reject_once"), Approval::Deny(None));
        assert_eq!(selected("reject_always"), Approval::DenySession);
        assert_eq!(selected("something else"), Approval::Deny(None));
        assert_eq!(
            decision(&RequestPermissionOutcome::Cancelled, None),
            Approval::Deny(None)
        );
        assert_eq!(
            decision(
                &RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                    "allow_always".to_string()
                )),
                Some("bash(npm test*)"),
            ),
            Approval::AllowRule("bash(npm test*)".to_string())
        );
    }
}
