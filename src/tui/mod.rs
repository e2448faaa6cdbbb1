//! The interactive interface: an inline live area at the bottom of the terminal (streaming
//! message, running tools, queue, composer, status line) above which finished transcript
//! cells are inserted into the terminal's own scrollback.

pub mod markdown;
pub mod theme;
