//! The composer's side of the `@` picker: the `@` word the cursor is at, and replacing it
//! with a chosen path.

use super::Composer;

impl Composer {
    /// What follows the `@` of the word that ends at the cursor, if that word starts with one
    /// (`None` while a history search runs).
    pub fn mention_query(&self) -> Option<String> {
        if self.search.is_some() {
            return None;
        }
        let (line, col) = self.line_and_column();
        let before: String = line.chars().take(col).collect();
        let word = before.rsplit(char::is_whitespace).next()?;
        word.strip_prefix('@').map(str::to_string)
    }

    /// Replace the `@` word before the cursor with `@path ` (no space after a directory, so
    /// typing goes on inside it).
    pub fn complete_mention(&mut self, path: &str) {
        let Some(query) = self.mention_query() else {
            return;
        };
        for _ in 0..query.chars().count() + 1 {
            self.textarea.delete_char();
        }
        self.textarea.insert_str(format!("@{path}"));
        if !path.ends_with('/') {
            self.textarea.insert_char(' ');
        }
    }
}
