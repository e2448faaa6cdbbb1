//! Attachments in the interface: a pasted image file's path and ctrl+v's clipboard image
//! become image chips in the composer (the clipboard's bytes saved beside the session
//! first), and what a sent prompt's `@path`s and chips attached (`agent::mentions`) is said
//! in one dim line under it: files with their size, directories with their entry count,
//! images as `[image: name 640×480]`, and what was named but not attached, with why.

use super::app::{App, TaskResult};
use crate::agent::mentions::Attached;
use std::io::Write;
use std::path::PathBuf;

/// A clipboard image saved for a chip: its file and size (width, height).
pub type SavedImage = (PathBuf, usize, usize);

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
    /// A paste that names an image file (a terminal's drag and drop pastes its path)
    /// becomes a chip; `false` when it names none.
    pub fn paste_image_path(&mut self, pasted: &str) -> bool {
        let Some(path) = pasted_image(pasted, &self.settings.cwd) else {
            return false;
        };
        let absolute = self.settings.cwd.join(&path);
        match imagesize::size(&absolute) {
            Ok(size) => self
                .composer
                .insert_image(&absolute, size.width, size.height),
            // Not an image after all: as `@path`, which says why it is not attached.
            Err(_) => self.composer.insert(&format!("@{path} ")),
        }
        true
    }

    /// ctrl+v: read the clipboard's image in a task, save it beside the session, and put a
    /// chip for it in the composer when it is there (`on_clipboard_image`).
    pub fn paste_clipboard_image(&mut self) {
        if self.clipboard_busy {
            return self.set_hint("still reading the clipboard");
        }
        self.clipboard_busy = true;
        let tasks = self.tasks.clone();
        let spill = self.agent.spill_dir();
        tokio::spawn(async move {
            let saved = match super::clipboard::read_image().await {
                Ok(image) => {
                    let suffix = format!(".{}", image.extension);
                    spill
                        .create("clipboard-", &suffix)
                        .and_then(|(mut file, path)| {
                            file.write_all(&image.bytes)?;
                            Ok((path, image.width, image.height))
                        })
                        .map_err(|e| format!("the clipboard's image could not be saved: {e}"))
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = tasks.send(TaskResult::ClipboardImage(saved));
        });
    }

    pub fn on_clipboard_image(&mut self, saved: Result<SavedImage, String>) {
        self.clipboard_busy = false;
        match saved {
            Ok((path, width, height)) => self.composer.insert_image(&path, width, height),
            Err(why) => self.notice(&why),
        }
        self.dirty = true;
    }

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
        let images = self.composer.images_in(&text);
        match self.agent.user_message_with(&text, &images) {
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
