//! Between the agent's terms and the protocol's: file paths and `file://` URIs, positions
//! (1-based line and character column for people and models; 0-based line and a column in
//! the negotiated encoding's units for servers), and the language id of a file.

pub use super::view::shown;
use lsp_types::{Position, Uri};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How servers count columns (negotiated at `initialize`; UTF-16 unless agreed otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    #[default]
    Utf16,
    Utf32,
}

impl Encoding {
    pub fn from_kind(kind: Option<&lsp_types::PositionEncodingKind>) -> Encoding {
        match kind.map(|k| k.as_str()) {
            Some("utf-8") => Encoding::Utf8,
            Some("utf-32") => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    fn units(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// The `file://` URI of an absolute path.
pub fn uri_of(path: &Path) -> Option<Uri> {
    let url = url::Url::from_file_path(path).ok()?;
    Uri::from_str(url.as_str()).ok()
}

/// The path a `file://` URI names.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()
}

/// The 1-based character column of a server's `position` on `line` (its text).
pub fn column_of(line: &str, character: u32, encoding: Encoding) -> usize {
    let wanted = usize::try_from(character).unwrap_or(usize::MAX);
    let mut units = 0;
    let mut column = 1;
    for c in line.chars() {
        if units >= wanted {
            break;
        }
        units += encoding.units(c);
        column += 1;
    }
    column
}

/// The server's position of 1-based `line` and character `column` in `text`.
pub fn position_in(text: &str, line: usize, column: usize, encoding: Encoding) -> Position {
    let line_index = line.saturating_sub(1);
    let line_text = text.lines().nth(line_index).unwrap_or("");
    let character: usize = line_text
        .chars()
        .take(column.saturating_sub(1))
        .map(|c| encoding.units(c))
        .sum();
    Position {
        line: u32::try_from(line_index).unwrap_or(u32::MAX),
        character: u32::try_from(character).unwrap_or(u32::MAX),
    }
}

/// The protocol's language id for a file, from its extension.
pub fn language_id(path: &Path) -> String {
    let extension = extension(path);
    match extension.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "m" => "objective-c",
        "mm" => "objective-cpp",
        other => other,
    }
    .to_string()
}

/// A file's extension, lower case, without the dot ("" for none).
pub fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_uris_go_both_ways() {
        let path = Path::new("/tmp/a dir/ü.rs");
        let uri = uri_of(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/%C3%BC.rs");
        assert_eq!(path_of(&uri).unwrap(), path);
        assert!(path_of(&Uri::from_str("untitled:1").unwrap()).is_none());
    }

    #[test]
    fn columns_count_characters_for_people_and_units_for_servers() {
        let line = "let é𝄞 = x;";
        // `=` is the 8th character; before it: l e t space é 𝄞 space.
        let equals = line.chars().position(|c| c == '=').unwrap() + 1;
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let position = position_in(line, 1, equals, encoding);
            assert_eq!(position.line, 0);
            assert_eq!(column_of(line, position.character, encoding), equals);
        }
        assert_eq!(position_in(line, 1, equals, Encoding::Utf16).character, 8);
        assert_eq!(position_in(line, 1, equals, Encoding::Utf8).character, 11);
        assert_eq!(position_in("a\nbc", 2, 2, Encoding::Utf16).line, 1);
    }
}
