//! What a server sends us unasked: diagnostics, progress and log messages (notifications),
//! and its own requests, answered at once — its configuration (from `[lsp.NAME] settings`,
//! by section), the workspace folder, yes to progress tokens and capability registrations,
//! and no to edits (the agent changes files only through its own tools).

use super::location::{path_of, uri_of};
use super::rpc::{Handler, METHOD_NOT_FOUND};
use super::server::{Progress, Server};
use lsp_types::{
    ConfigurationParams, ProgressParams, ProgressParamsValue, PublishDiagnosticsParams,
    WorkDoneProgress,
};
use serde_json::{Value, json};
use std::sync::Weak;

pub struct Inbox {
    server: Weak<Server>,
    /// The start of the server this inbox belongs to: after a restart, the old one is mute.
    generation: u64,
}

impl Inbox {
    pub fn new(server: Weak<Server>, generation: u64) -> Inbox {
        Inbox { server, generation }
    }

    fn server(&self) -> Option<std::sync::Arc<Server>> {
        let server = self.server.upgrade()?;
        server.is_generation(self.generation).then_some(server)
    }
}

impl Handler for Inbox {
    fn notification(&self, method: &str, params: Value) {
        let Some(server) = self.server() else { return };
        match method {
            "textDocument/publishDiagnostics" => {
                let Ok(params) = serde_json::from_value::<PublishDiagnosticsParams>(params) else {
                    tracing::debug!(target: "lsp", server = server.name(), "unreadable diagnostics");
                    return;
                };
                if let Some(path) = path_of(&params.uri) {
                    server.publish(path, params.version, params.diagnostics);
                }
            }
            "$/progress" => {
                let Ok(params) = serde_json::from_value::<ProgressParams>(params) else {
                    return;
                };
                let token = match params.token {
                    lsp_types::NumberOrString::Number(n) => n.to_string(),
                    lsp_types::NumberOrString::String(s) => s,
                };
                let ProgressParamsValue::WorkDone(work) = params.value;
                match work {
                    WorkDoneProgress::Begin(begin) => server.progress(
                        token,
                        Some(Progress {
                            title: begin.title,
                            message: begin.message,
                            percentage: begin.percentage,
                        }),
                    ),
                    WorkDoneProgress::Report(report) => {
                        if let Some(mut progress) = server.progress_of(&token) {
                            progress.message = report.message.or(progress.message);
                            progress.percentage = report.percentage.or(progress.percentage);
                            server.progress(token, Some(progress));
                        }
                    }
                    WorkDoneProgress::End(_) => server.progress(token, None),
                }
            }
            "window/logMessage" | "window/showMessage" => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::debug!(target: "lsp", server = server.name(), %message);
            }
            _ => {}
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        let server = self.server();
        match method {
            "workspace/configuration" => {
                let items = serde_json::from_value::<ConfigurationParams>(params)
                    .map(|p| p.items)
                    .unwrap_or_default();
                let settings = server.as_ref().and_then(|s| s.spec.settings.clone());
                let answers: Vec<Value> = items
                    .iter()
                    .map(|item| section(settings.as_ref(), item.section.as_deref()))
                    .collect();
                Ok(Value::Array(answers))
            }
            "workspace/workspaceFolders" => Ok(server
                .as_ref()
                .and_then(|s| {
                    let uri = uri_of(&s.root)?;
                    Some(json!([{"uri": uri, "name": s.root.display().to_string()}]))
                })
                .unwrap_or(Value::Null)),
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/inlineValue/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            "workspace/applyEdit" => Ok(json!({
                "applied": false,
                "failureReason": "the agent changes files only through its own tools"
            })),
            _ => Err((METHOD_NOT_FOUND, format!("{method} is not supported"))),
        }
    }
}

/// The part of `settings` a `workspace/configuration` item asks for (`python.analysis`:
/// `settings.python.analysis`); `null` when there is none.
fn section(settings: Option<&Value>, section: Option<&str>) -> Value {
    let Some(settings) = settings else {
        return Value::Null;
    };
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return settings.clone();
    };
    section
        .split('.')
        .try_fold(settings, |value, key| value.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_answered_by_section() {
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}});
        assert_eq!(
            section(Some(&settings), Some("python.analysis")),
            json!({"typeCheckingMode": "strict"})
        );
        assert_eq!(section(Some(&settings), Some("python.x")), Value::Null);
        assert_eq!(section(Some(&settings), None), settings);
        assert_eq!(section(None, Some("python")), Value::Null);
    }
}
