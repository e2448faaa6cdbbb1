//! The interactive interface: an inline live area at the bottom of the terminal (streaming
//! message, running tools, queue, composer, status line) above which finished transcript
//! cells are inserted into the terminal's own scrollback.

pub mod cells;
pub mod composer;
pub mod markdown;
pub mod screen;
pub mod theme;
pub mod wrap;
