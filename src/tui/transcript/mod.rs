//! The transcript: the whole conversation kept as entries (`log`), and the full-screen view
//! of it that ctrl+o opens (`view`), rendered entry by entry (`render`).

pub mod log;
mod render;
pub mod view;

pub use log::{Entry, Log, Text, Tool};
pub use view::View;
