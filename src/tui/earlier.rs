//! The older messages of a long resumed session, told once they are counted: the
//! interface opens such a session on its newest messages before its file was read back
//! (`session::cold`), says "earlier messages" without a number, and names how many there
//! are in all, and the first prompt, when the engine has found them (it announces their
//! usage then, `usage_update`).

use super::app::App;
use crate::protocol::message::Message;

/// A `usage_update` arrived: if the older messages were not told yet and are counted now,
/// say how many messages the session has and what its first prompt was.
pub fn counted(app: &mut App) {
    if !app.run.earlier_untold || app.agent.earlier_pending() {
        return;
    }
    app.run.earlier_untold = false;
    let total = app.agent.message_count();
    let first = app
        .agent
        .first_user_message()
        .and_then(|m| match m.as_ref() {
            Message::User(user) => Some(user.typed_text().to_string()),
            _ => None,
        })
        .map(|text| {
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            format!(", from “{}”", super::width::cut(&words, 50))
        })
        .unwrap_or_default();
    app.notice(&format!(
        "… {} in this session{first}",
        super::cells::counted(total, "message")
    ));
}
