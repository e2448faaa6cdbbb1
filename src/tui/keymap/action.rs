//! Every key the interface answers, as a named action (`context.verb`): the context it works
//! in, its default chords (today's keys) and the one line `/help` and `/keys` show. The first
//! default chord of an action is the one the handlers recognise (`Keymap::translate` turns a
//! rebound chord into it).
//!
//! Not actions: printable text where text is typed (the composer, the search lines, the
//! steer and message inputs), the composer's readline editing keys, and `@`.

use std::fmt;

/// Where an action works. The view on top decides the context; a context falls back to its
/// parent (`parent`), and every chain ends at `Global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    /// Whatever is open.
    Global,
    /// Writing a prompt.
    Composer,
    /// The ctrl+r search of earlier prompts.
    HistorySearch,
    /// The question before a tool call.
    Approval,
    /// The lists (`/rewind`, `/fork`, `/tree`, plan approval) and the session picker.
    Menu,
    /// The session picker (`/resume`, `agent -r`): its keys over the lists'.
    Picker,
    /// The transcript view (ctrl+o) and `/diff`.
    Transcript,
    /// The agent view (ctrl+g): a sub-agent's transcript (its keys over the transcript's).
    AgentView,
}

impl Context {
    pub const ALL: [Context; 8] = [
        Context::Global,
        Context::Composer,
        Context::HistorySearch,
        Context::Approval,
        Context::Menu,
        Context::Picker,
        Context::Transcript,
        Context::AgentView,
    ];

    /// The context whose actions work here too, unless this one binds the chord.
    pub fn parent(self) -> Option<Context> {
        match self {
            Context::Global => None,
            Context::AgentView => Some(Context::Transcript),
            Context::Picker => Some(Context::Menu),
            _ => Some(Context::Global),
        }
    }

    /// This context and those it falls back to, nearest first.
    pub fn chain(self) -> impl Iterator<Item = Context> {
        std::iter::successors(Some(self), |context| context.parent())
    }

    /// Whether one of the two is active whenever the other is (a chord bound in both is
    /// one chord for two actions there).
    pub fn overlaps(self, other: Context) -> bool {
        self.chain().any(|c| c == other) || other.chain().any(|c| c == self)
    }

    /// Where characters are typed as text, so a plain character cannot be a chord (Global
    /// is active under the composer).
    pub fn types_text(self) -> bool {
        matches!(
            self,
            Context::Global
                | Context::Composer
                | Context::HistorySearch
                | Context::Menu
                | Context::Picker
        )
    }

    /// The heading `/help` and `/keys` give the context's actions.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Anywhere",
            Context::Composer => "Composer",
            Context::HistorySearch => "History search",
            Context::Approval => "Approval",
            Context::Menu => "Lists and the session picker",
            Context::Picker => "Session picker",
            Context::Transcript => "Transcript view",
            Context::AgentView => "Agent view",
        }
    }
}

macro_rules! actions {
    ($($variant:ident $name:literal $context:ident [$($chord:literal),*] $help:literal;)*) => {
        /// A named thing a key does.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action { $($variant,)* }

        /// Every action, in the order `/help` and `/keys` list them.
        pub const ACTIONS: &[Spec] = &[
            $(Spec {
                action: Action::$variant,
                name: $name,
                context: Context::$context,
                defaults: &[$($chord),*],
                help: $help,
            },)*
        ];
    };
}

actions! {
    AppInterrupt "app.interrupt" Global ["ctrl+c"] "stop the agent; when idle clear, twice to quit";
    AppSuspend "app.suspend" Global ["ctrl+z"] "suspend (fg brings it back)";
    ThinkingToggle "thinking.toggle" Global ["ctrl+t"] "show or hide thinking";
    TranscriptOpen "view.transcript" Global ["ctrl+o"] "transcript view (esc closes)";
    AgentsOpen "view.agents" Global ["ctrl+g"] "agent view: a sub-agent's transcript as it streams";

    ComposerSubmit "composer.submit" Composer ["enter"] "send; while the agent works, steer it";
    ComposerFollowUp "composer.follow_up" Composer ["alt+enter"] "queue a follow-up for when it is done";
    ComposerNewline "composer.newline" Composer ["shift+enter", "ctrl+enter", "ctrl+j"] "new line";
    HistoryPrevious "composer.history_previous" Composer ["up"] "earlier prompt (on the first row)";
    HistoryNext "composer.history_next" Composer ["down"] "later prompt (on the last row)";
    HistorySearch "composer.history_search" Composer ["ctrl+r"] "search earlier prompts (esc cancels)";
    EditQueued "composer.edit_queued" Composer ["alt+up"] "edit the last queued message";
    PasteImage "composer.paste_image" Composer ["ctrl+v"] "paste an image from the clipboard";
    Undo "composer.undo" Composer ["ctrl+_", "ctrl+/"] "undo";
    Redo "composer.redo" Composer ["ctrl+shift+z"] "redo";
    RunInterrupt "run.interrupt" Composer ["esc"] "stop the agent; twice on an empty composer: rewind";
    ModeCycle "mode.cycle" Composer ["shift+tab"] "next permission mode (shown in the status line)";
    AppQuit "app.quit" Composer ["ctrl+d"] "quit (on an empty composer)";

    SearchOlder "search.older" HistorySearch ["ctrl+r"] "the next older match";
    SearchAccept "search.accept" HistorySearch ["enter"] "take the match (an arrow key too)";
    SearchCancel "search.cancel" HistorySearch ["esc", "ctrl+c", "ctrl+g"] "leave the search; the draft comes back";

    ApprovalAllow "approval.allow" Approval ["y", "enter"] "allow this call";
    ApprovalAllowSession "approval.allow_session" Approval ["a"] "allow it for this session";
    ApprovalUnsandboxed "approval.allow_unsandboxed" Approval ["u"] "run the command outside the sandbox, once";
    ApprovalDeny "approval.deny" Approval ["n"] "deny it";
    ApprovalDenyWithMessage "approval.deny_with_message" Approval ["m"] "deny it and tell the model why";
    ApprovalStop "approval.stop" Approval ["esc"] "deny it and stop the run";
    ApprovalScrollUp "approval.scroll_up" Approval ["up", "k"] "scroll the preview up";
    ApprovalScrollDown "approval.scroll_down" Approval ["down", "j"] "scroll the preview down";
    ApprovalPageUp "approval.page_up" Approval ["pageup"] "a page up";
    ApprovalPageDown "approval.page_down" Approval ["pagedown", "space"] "a page down";
    ApprovalTop "approval.top" Approval ["home"] "the preview's start";
    ApprovalBottom "approval.bottom" Approval ["end"] "the preview's end";

    MenuUp "menu.up" Menu ["up"] "the item above";
    MenuDown "menu.down" Menu ["down"] "the item below";
    MenuChoose "menu.choose" Menu ["enter"] "choose the item";
    MenuClose "menu.close" Menu ["esc"] "close (the picker clears its search first)";

    PickerRename "picker.rename" Picker ["ctrl+r"] "rename the highlighted session (enter saves, esc cancels)";
    PickerDelete "picker.delete" Picker ["ctrl+d"] "delete the highlighted session (asks y/n first)";

    ViewClose "view.close" Transcript ["esc", "q"] "close the view";
    ViewUp "view.up" Transcript ["up", "k"] "a line up";
    ViewDown "view.down" Transcript ["down", "j", "enter"] "a line down";
    ViewPageUp "view.page_up" Transcript ["pageup", "b"] "a page up";
    ViewPageDown "view.page_down" Transcript ["pagedown", "space"] "a page down";
    ViewTop "view.top" Transcript ["home", "g"] "the start";
    ViewBottom "view.bottom" Transcript ["end", "G"] "the end (follows new output)";
    ViewSearch "view.search" Transcript ["/"] "search (backward from here)";
    ViewOlderMatch "view.older_match" Transcript ["n"] "the next older match";
    ViewNewerMatch "view.newer_match" Transcript ["N"] "the next newer match";

    AgentSteer "agent.steer" AgentView ["s"] "steer the sub-agent: type, enter sends";
    AgentStop "agent.stop" AgentView ["x"] "stop the sub-agent";
    AgentNext "agent.next" AgentView ["tab"] "the next sub-agent";
}

/// An action's name, context, default chords and help line.
#[derive(Debug, PartialEq, Eq)]
pub struct Spec {
    pub action: Action,
    pub name: &'static str,
    pub context: Context,
    pub defaults: &'static [&'static str],
    pub help: &'static str,
}

impl Action {
    pub fn spec(self) -> &'static Spec {
        // The table is generated with the enum, in the same order.
        &ACTIONS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn context(self) -> Context {
        self.spec().context
    }

    /// The action a `[keys]` name names.
    pub fn named(name: &str) -> Option<Action> {
        ACTIONS
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| spec.action)
    }

    /// The known name closest to a mistyped one, when one is close.
    pub fn closest(name: &str) -> Option<&'static str> {
        ACTIONS
            .iter()
            .map(|spec| (strsim::levenshtein(name, spec.name), spec.name))
            .filter(|(distance, _)| *distance <= 3)
            .min()
            .map(|(_, name)| name)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_enum_order_and_names_are_unique() {
        for (i, spec) in ACTIONS.iter().enumerate() {
            assert_eq!(spec.action as usize, i, "{}", spec.name);
            assert_eq!(spec.action.spec(), spec);
            assert_eq!(Action::named(spec.name), Some(spec.action));
            assert!(!spec.defaults.is_empty(), "{} has no default", spec.name);
            assert!(!spec.help.is_empty(), "{} has no help", spec.name);
        }
        let mut names: Vec<_> = ACTIONS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ACTIONS.len());
    }

    #[test]
    fn contexts_fall_back_to_global() {
        for context in Context::ALL {
            assert_eq!(context.chain().last(), Some(Context::Global));
        }
        assert!(Context::AgentView.overlaps(Context::Transcript));
        assert!(Context::Composer.overlaps(Context::Global));
        assert!(!Context::Composer.overlaps(Context::Approval));
    }

    #[test]
    fn a_mistyped_name_finds_the_real_one() {
        assert_eq!(Action::closest("composer.sumbit"), Some("composer.submit"));
        assert_eq!(Action::closest("nothing.like.it.at.all"), None);
    }
}
