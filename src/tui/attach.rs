//! What the `@path`s of a sent prompt attached (`agent::mentions`), said in one dim line
//! under it: files with their size, directories with their entry count, images as
//! `[image: name 640×480]`, and what was named but not attached, with why.

use super::app::App;
use crate::agent::mentions::Attached;

/// How an attachment reads in the note.
pub fn describe(attached: &Attached) -> String {
    match attached {
        Attached::File { path, bytes } => {
            if *bytes >= 1024 {
                format!("{path} ({} KB)", bytes / 1024)
            } else {
                format!("{path} ({bytes} B)")
            }
        }
        Attached::Directory { path, entries } => format!("{path}/ ({entries} entries)"),
        Attached::Image {
            path,
            width,
            height,
        } => {
            let name = std::path::Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
            format!("[image: {name} {width}×{height}]")
        }
        Attached::Skipped { path, why } => format!("{path} not attached: {why}"),
    }
}

/// The path of an image file `pasted` names (alone, perhaps quoted or as a `file://` URL),
/// as an `@` word can name it: relative to `cwd` when inside it.
pub fn pasted_image(pasted: &str, cwd: &std::path::Path) -> Option<String> {
    let trimmed = pasted.trim().trim_matches(['\'', '"']);
    let trimmed = trimmed.strip_prefix("file://").unwrap_or(trimmed);
    let unescaped = trimmed.replace("\\ ", " ");
    if unescaped.contains(char::is_whitespace) || unescaped.is_empty() {
        return None;
    }
    let path = std::path::Path::new(&unescaped);
    crate::agent::mentions::image_mime(path)?;
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    if !absolute.is_file() {
        return None;
    }
    Some(match absolute.strip_prefix(cwd) {
        Ok(relative) => relative.to_string_lossy().into_owned(),
        Err(_) => absolute.to_string_lossy().into_owned(),
    })
}

impl App {
    /// Say what a prompt's `@path`s attached (nothing when none).
    pub fn note_attachments(&mut self, attached: &[Attached]) {
        if attached.is_empty() {
            return;
        }
        let list: Vec<String> = attached.iter().map(describe).collect();
        self.notice(&format!("Attached: {}", list.join(", ")));
    }

    /// alt+enter: `text` queued as a follow-up, its `@path`s attached.
    pub fn follow_up_text(&mut self, text: String) {
        match self.agent.user_message(&text) {
            Ok((message, attached)) => {
                self.note_attachments(&attached);
                self.agent.follow_up(message);
            }
            Err(e) => {
                self.composer.set_text(&text);
                self.warning(&e.to_string());
            }
        }
    }
}
