//! Attachments in the interface: a pasted image file's path and ctrl+v's clipboard image
//! become image chips in the composer (the clipboard's bytes saved beside the session
//! first), and what a sent prompt's `@path`s and chips attached (`agent::mentions`) is said
//! in one dim line under it: files with their size, directories with their entry count,
//! images as `[image: name 640×480]`, and what was named but not attached, with why.

use super::app::{App, TaskResult};
use crate::agent::mentions::Attached;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// The image files `pasted` names — one, or several (a terminal's drop of several files),
/// each perhaps quoted, backslash-escaped or a `file://` URL — when it names nothing else:
/// their absolute paths.
pub fn pasted_images(pasted: &str, cwd: &Path) -> Option<Vec<PathBuf>> {
    let words = shell_words(pasted)?;
    if words.is_empty() {
        return None;
    }
    words
        .iter()
        .map(|word| {
            let word = match word.strip_prefix("file://") {
                Some(url) => percent_decoded(url),
                None => word.clone(),
            };
            let path = Path::new(&word);
            crate::agent::mentions::image_mime(path)?;
            let absolute = if path.is_absolute() {
                path.to_path_buf()
            } else {
                cwd.join(path)
            };
            absolute.is_file().then_some(absolute)
        })
        .collect()
}

/// `text` split into words as a shell would: quotes and backslashes keep spaces in a word
/// (`None` for an unclosed quote or a trailing backslash).
fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_default().push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            None if c == '\\' => word.get_or_insert_default().push(chars.next()?),
            None if c.is_whitespace() => words.extend(word.take()),
            None => word.get_or_insert_default().push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    words.extend(word);
    Some(words)
}

/// A `file://` URL's path with its `%XX` escapes decoded (left as they are when invalid).
fn percent_decoded(url: &str) -> String {
    let bytes = url.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl App {
    /// A paste that names image files (a terminal's drag and drop pastes their paths)
    /// becomes chips; `false` when it names something else.
    pub fn paste_image_paths(&mut self, pasted: &str) -> bool {
        let Some(paths) = pasted_images(pasted, &self.settings.cwd) else {
            return false;
        };
        for path in paths {
            match imagesize::size(&path) {
                Ok(size) => self
                    .input
                    .composer
                    .insert_image(&path, size.width, size.height),
                // Not an image after all: as `@path`, which says why it is not attached.
                Err(_) => {
                    let shown = path.strip_prefix(&self.settings.cwd).unwrap_or(&path);
                    self.input
                        .composer
                        .insert(&format!("@{} ", shown.display()));
                }
            }
        }
        true
    }

    /// ctrl+v: read the clipboard's image in a task, save it beside the session, and put a
    /// chip for it in the composer when it is there (`on_clipboard_image`).
    pub fn paste_clipboard_image(&mut self) {
        if self.input.clipboard_busy {
            return self.set_hint("still reading the clipboard");
        }
        self.input.clipboard_busy = true;
        let tasks = self.tasks.clone();
        let spill = self.agent.spill_dir();
        crate::tasks::spawn(async move {
            let saved = match super::clipboard::read_image().await {
                Ok(image) => spill
                    .create_numbered("clipboard", image.extension)
                    .and_then(|(mut file, path)| {
                        file.write_all(&image.bytes)?;
                        Ok((path, image.width, image.height))
                    })
                    .map_err(|e| format!("the clipboard's image could not be saved: {e}")),
                Err(e) => Err(e.to_string()),
            };
            let _ = tasks.send(TaskResult::ClipboardImage(saved));
        });
    }

    pub fn on_clipboard_image(&mut self, saved: Result<SavedImage, String>) {
        self.input.clipboard_busy = false;
        match saved {
            Ok((path, width, height)) => self.input.composer.insert_image(&path, width, height),
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

    /// Why `text` cannot be sent as it is: it holds an image chip's label whose image is
    /// not known (recalled from an earlier run), which would attach nothing.
    pub fn unknown_chips(&self, text: &str) -> Option<String> {
        let unknown = self.input.composer.unknown_chips(text);
        let first = unknown.first()?;
        Some(format!(
            "{first} is only text now: its image was pasted in an earlier run and is not known; \
             paste the image again, or edit the label out (nothing was sent)"
        ))
    }

    /// alt+enter: `text` queued as a follow-up (a custom command or skill expanded), its
    /// `@path`s attached; when idle it starts a run.
    pub fn follow_up_text(&mut self, text: String) {
        if let Some(problem) = self.unknown_chips(&text) {
            self.input.composer.set_text(&text);
            self.warning(&problem);
            return;
        }
        self.send_prompt(text, crate::protocol::command::Delivery::FollowUp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_of_image_paths_names_each_and_anything_else_names_none() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        for name in ["a.png", "my shot.jpg", "notes.txt"] {
            std::fs::write(cwd.join(name), b"x").unwrap();
        }
        let a = cwd.join("a.png");
        let shot = cwd.join("my shot.jpg");
        assert_eq!(pasted_images("a.png", cwd), Some(vec![a.clone()]));
        let dropped = format!("'{}' {}\n", shot.display(), a.display());
        assert_eq!(
            pasted_images(&dropped, cwd),
            Some(vec![shot.clone(), a.clone()])
        );
        assert_eq!(
            pasted_images("my\\ shot.jpg \"a.png\"", cwd),
            Some(vec![shot.clone(), a.clone()])
        );
        let url = format!("file://{}", shot.display()).replace(' ', "%20");
        assert_eq!(pasted_images(&url, cwd), Some(vec![shot]));
        for other in [
            "look at a.png",
            "a.png notes.txt",
            "missing.png",
            "'a.png",
            "",
        ] {
            assert_eq!(pasted_images(other, cwd), None, "{other:?}");
        }
    }
}
