//! The interactive interface: an inline live area at the bottom of the terminal (streaming
//! message, running tools, queue, composer, status line) above which finished transcript
//! cells are inserted into the terminal's own scrollback.

mod agents;
pub mod ansi;
pub mod app;
mod approval;
mod asking;
mod attach;
pub mod cells;
mod clipboard;
pub mod commands;
pub mod composer;
mod copy;
pub mod diff_view;
mod engine;
mod events;
mod follow;
mod frame_diff;
mod goal;
pub mod history;
pub mod keymap;
mod keys;
mod keys_command;
mod live;
mod lsp_view;
pub mod markdown;
mod mcp_view;
pub mod mention;
mod notify;
mod permissions_view;
mod plan;
mod probe;
mod ps;
mod resume_hint;
mod rewind;
pub mod run;
pub mod screen;
pub mod shell;
mod sign_in;
mod start;
pub mod status;
pub mod status_command;
mod terminal;
pub mod theme;
pub mod theme_command;
mod todo_panel;
pub mod transcript;
mod tree_menu;
mod trust;
mod usage_view;
mod viewer;
pub mod views;
pub mod width;
pub mod wrap;

pub use run::{Start, attach, run};
pub use start::REPLAY;
