//! Where the engine asks the language servers (`crate::lsp`): after a call that changed a
//! file (`write`, `edit`: its diagnostics go into the result), after any other call that may
//! have changed files (`bash`: the diagnostics of the files the servers have open and it
//! changed), and after a call that read a file (its server starts and opens it in the
//! background, so a later change can tell new problems from old ones). Which call does what
//! comes from the tools' own descriptions (`meta::file_of_call`, `read_only`).

use super::run::Run;
use crate::protocol::message::ToolCall;
use crate::tools::ToolOutput;

impl Run {
    /// After `call` ran (and its hooks): add the language servers' diagnostics to `output`.
    pub(crate) async fn lsp_after(&self, call: &ToolCall, output: &mut ToolOutput) {
        let Some(lsp) = self.settings.tool_settings.lsp.clone() else {
            return;
        };
        let cwd = &self.settings.cwd;
        let reports = match crate::tools::meta::file_of_call(&call.name, &call.arguments) {
            Some((raw, changed)) => {
                let path = crate::tools::path::resolve(cwd, raw);
                if !lsp.serves(&path) || output.is_error {
                    return;
                }
                // `diagnostics_wait_secs = 0`: the server gets the change, nobody waits.
                if !changed || lsp.wait().is_zero() {
                    lsp.touch(path);
                    return;
                }
                lsp.after_change(&[path], &self.cancel).await
            }
            None => {
                let changes_files = self
                    .settings
                    .tools
                    .get(&call.name)
                    .is_some_and(|tool| !tool.read_only());
                if !changes_files || lsp.wait().is_zero() {
                    return;
                }
                lsp.after_command(&self.cancel).await
            }
        };
        crate::lsp::report::attach(output, &reports, cwd);
    }
}
