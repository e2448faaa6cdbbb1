//! The dialogs and full-screen views over the composer: the approval question (and those
//! waiting behind it), the session picker, the list menus (`/rewind`, `/fork`, `/tree`,
//! `/ps`, plan approval, hook trust), and the transcript, agent and diff views.

/// A dialog over the composer (`Views::top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialog {
    Approval,
    Picker,
    Menu,
}

/// What is open over the composer. Which dialog is drawn and gets the keys is one order
/// (`Views::top`): approval over picker over menu.
#[derive(Default)]
pub struct Views {
    pub approval: Option<super::approval::Approval>,
    /// Requests that came while the dialog showed another, oldest first.
    pub approvals_waiting: std::collections::VecDeque<super::approval::Approval>,
    pub picker: Option<super::picker::Picker>,
    /// The list of `/rewind`, `/fork` or `/tree`, while it is open.
    pub menu: Option<super::menu::Menu>,
    /// A project's hooks waiting for the user's trust (the question is the open menu).
    pub untrusted_hooks: Option<crate::extensions::hooks::trust::ProjectHooks>,
    /// The transcript view, while it is open.
    pub view: Option<super::transcript::View>,
    /// The agent view's child (the view itself is `view`), while it is open.
    pub agent_focus: Option<super::agents::AgentFocus>,
    /// What `/diff` shows (the view itself is `view`), while it is open.
    pub diff_log: Option<super::transcript::Log>,
    /// The git snapshot taken at start, for `/diff` when checkpoints are off.
    pub git_baseline: Option<super::diff_view::GitBaseline>,
}

impl Views {
    /// The dialog over the composer that is drawn and gets the keys: an approval over the
    /// session picker over a menu (a hook-trust question, `/rewind`'s list) — one order for
    /// both, so the dialog seen is the one that answers (D23).
    pub fn top(&self) -> Option<Dialog> {
        if self.approval.is_some() {
            Some(Dialog::Approval)
        } else if self.picker.is_some() {
            Some(Dialog::Picker)
        } else if self.menu.is_some() {
            Some(Dialog::Menu)
        } else {
            None
        }
    }
}
