//! Plan mode (`--permission-mode plan`, `/plan`, shift+tab): the permission rules deny every
//! mutating tool (`tools::permission`); here the model is told what the mode means, so it
//! investigates with the read-only tools and ends its answer with a plan the user approves
//! (the TUI then switches to ask or auto mode and asks it to carry the plan out).

use crate::tools::permission::PermissionMode;
use std::borrow::Cow;

/// What the model is told, after the system prompt, while the agent is in plan mode;
/// `asks`: the model is offered `ask_user` to settle open questions with the user.
pub fn instructions(asks: bool) -> String {
    let (ask_tool, open_questions) = if asks {
        (
            ", ask_user",
            "settle the open questions only the user can answer (a choice between approaches, \
             what they meant) with the ask_user tool before you present the plan, rather than \
             guessing or listing them in it.",
        )
    } else {
        (
            "",
            "list the open questions only the user can answer (a choice between approaches, \
             what they meant) at the start of the plan rather than guessing.",
        )
    };
    format!(
        "# Plan mode\n\
         The user has switched on plan mode: do not change anything yet. Only read-only tools \
         run (read, grep, find, ls, todo_write{ask_tool}); any tool that would change files or \
         run programs is refused. Investigate what you need to; {open_questions} Then end your \
         answer with a concise, numbered plan of the changes you propose (files, steps, how to \
         check them). The user will approve the plan or ask for changes before anything is \
         done."
    )
}

/// The system prompt a request is sent with in `mode` (`asks`: `ask_user` is offered).
pub fn system_prompt(base: &str, mode: PermissionMode, asks: bool) -> Cow<'_, str> {
    if mode == PermissionMode::Plan {
        Cow::Owned(format!("{base}\n\n{}", instructions(asks)))
    } else {
        Cow::Borrowed(base)
    }
}

/// What the user's approval of a plan sends the model.
pub const APPROVED: &str = "The plan is approved. Carry it out now.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_ask_user_only_where_it_is_offered() {
        let asking = instructions(true);
        assert!(asking.contains("with the ask_user tool"), "{asking}");
        assert!(asking.contains("todo_write, ask_user)"), "{asking}");
        let not = instructions(false);
        assert!(!not.contains("ask_user"), "{not}");
        assert!(not.contains("list the open questions"), "{not}");
        assert_eq!(system_prompt("base", PermissionMode::Ask, true), "base");
    }
}
