//! The line the interface prints when it exits: how to resume exactly this session
//! (`agent -c` when it is the directory's most recent one, else `agent -r ID`), when the
//! session has a conversation kept on disk.

use crate::agent::Agent;
use crate::config::Settings;
use crate::session::store;
use std::path::Path;

/// The hint for `agent`'s session as it is now (at exit).
pub fn for_agent(agent: &Agent, settings: &Settings) -> Option<String> {
    let session = agent.snapshot().session;
    resume_hint(
        &session.id,
        session.path.as_deref(),
        agent.message_count() > 0,
        &settings.paths.sessions_dir,
        &settings.cwd,
    )
}

/// `Resume this session with: …`, or `None` when there is nothing to resume (no message, or
/// `--no-session`).
fn resume_hint(
    session_id: &str,
    session_file: Option<&Path>,
    has_messages: bool,
    sessions_dir: &Path,
    cwd: &Path,
) -> Option<String> {
    let file = session_file.filter(|f| has_messages && f.is_file())?;
    // What `-c` would pick, found as `-c` finds it: without reading the sessions through
    // (listing them with titles read the whole of a long session's file at every exit).
    let latest = store::latest_for(sessions_dir, cwd).is_some_and(|latest| latest.path == file);
    let command = if latest {
        "agent -c".to_string()
    } else if store::find_by_id(sessions_dir, session_id).is_ok_and(|found| found == file) {
        format!("agent -r {session_id}")
    } else {
        format!("agent --session {}", file.display())
    };
    Some(format!("Resume this session with: {command}"))
}
