//! The YAML front matter of command and skill files (`---` … `---` at the top of a Markdown
//! file), read as flat `key: value` pairs with the line each came from.
//!
//! Written by hand rather than with a YAML crate: the files we read (Claude Code commands,
//! Agent Skills) only use flat scalar keys (`description`, `argument-hint`, `model`, `name`),
//! none of the YAML crates is in our dependency tree already, and an error here must name
//! the file's line — which this parser knows exactly. Supported: plain, `'single'` and
//! `"double"` quoted values, `|` / `>` block scalars, plain values continued on indented
//! lines, and nested blocks (kept as raw text, as `metadata:` or `allowed-tools:` lists are,
//! which we do not use). Anything else is an error with its line.

/// One `key: value` of the front matter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub value: String,
    /// 1-based line of the key in the file.
    pub line: usize,
}

/// A Markdown file split into its front matter and body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub fields: Vec<Field>,
    pub body: String,
    /// Whether the file had front matter at all.
    pub has_front_matter: bool,
}

impl Document {
    pub fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The value of `key`, trimmed, when present and not empty.
    pub fn value(&self, key: &str) -> Option<String> {
        self.get(key)
            .map(|f| f.value.trim().to_string())
            .filter(|v| !v.is_empty())
    }
}

/// What is wrong with the front matter, and on which (1-based) line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct FrontMatterError {
    pub line: usize,
    pub message: String,
}

fn error(line: usize, message: impl Into<String>) -> FrontMatterError {
    FrontMatterError {
        line,
        message: message.into(),
    }
}

/// Split `text` into front matter and body. A file without a leading `---` line has no
/// front matter: all of it is the body.
pub fn parse(text: &str) -> Result<Document, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(Document::default());
    };
    if first.trim_end() != "---" {
        return Ok(Document {
            body: text.to_string(),
            ..Document::default()
        });
    }
    let mut header = Vec::new();
    let mut consumed = first.len();
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        header.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err(error(
            1,
            "the front matter that starts here is not closed by a `---` line",
        ));
    }
    let fields = parse_fields(&header)?;
    Ok(Document {
        fields,
        body: text[consumed.min(text.len())..].to_string(),
        has_front_matter: true,
    })
}

/// The header lines (after the opening `---`; line 2 of the file is `header[0]`).
fn parse_fields(header: &[&str]) -> Result<Vec<Field>, FrontMatterError> {
    let mut fields: Vec<Field> = Vec::new();
    let mut index = 0;
    while index < header.len() {
        let line_number = index + 2;
        let line = header[index];
        index += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(error(
                line_number,
                format!("`{trimmed}` is indented but belongs to no key"),
            ));
        }
        let Some((key, rest)) = split_key(line) else {
            return Err(error(
                line_number,
                format!("expected `key: value`, found `{trimmed}`"),
            ));
        };
        if fields.iter().any(|f| f.key == key) {
            return Err(error(line_number, format!("`{key}` is given twice")));
        }
        // The indented lines that follow belong to this key.
        let start = index;
        while index < header.len()
            && (header[index].trim().is_empty() || header[index].starts_with([' ', '\t']))
        {
            index += 1;
        }
        let continuation = &header[start..index];
        let value = scalar(rest.trim(), continuation, line_number)?;
        fields.push(Field {
            key: key.to_string(),
            value,
            line: line_number,
        });
    }
    Ok(fields)
}

/// `key: rest` — the key is everything before the first `: ` (or a trailing `:`).
fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = match line.split_once(": ") {
        Some(pair) => pair,
        None => (line.trim_end().strip_suffix(':')?, ""),
    };
    let key = key.trim();
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    valid.then_some((key, rest))
}

/// The value of a key from the rest of its line and its indented continuation lines.
fn scalar(rest: &str, continuation: &[&str], line: usize) -> Result<String, FrontMatterError> {
    let rest = strip_comment(rest);
    let indented = || {
        let lines: Vec<&str> = continuation.iter().map(|l| l.trim()).collect();
        lines
    };
    match rest.chars().next() {
        None => Ok(indented().join("\n").trim().to_string()),
        Some('|') => Ok(block(continuation, true)),
        Some('>') => Ok(block(continuation, false)),
        Some(quote @ ('"' | '\'')) => {
            if !continuation.iter().all(|l| l.trim().is_empty()) {
                return Err(error(
                    line + 1,
                    "a quoted value must be on one line in front matter",
                ));
            }
            unquote(rest, quote).ok_or_else(|| {
                error(
                    line,
                    format!("the value {rest} has no closing {quote} quote"),
                )
            })
        }
        Some(_) => {
            let mut value = rest.to_string();
            for extra in indented().into_iter().filter(|l| !l.is_empty()) {
                value.push(' ');
                value.push_str(extra);
            }
            Ok(value)
        }
    }
}

/// A plain value ends where ` #` starts a comment.
fn strip_comment(value: &str) -> &str {
    if value.starts_with(['"', '\'']) {
        return value;
    }
    match value.find(" #") {
        Some(at) => value[..at].trim_end(),
        None => value,
    }
}

/// `|` keeps the lines, `>` folds them into one.
fn block(lines: &[&str], literal: bool) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let texts: Vec<&str> = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect();
    let joined = if literal {
        texts.join("\n")
    } else {
        texts
            .iter()
            .filter(|l| !l.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    };
    joined.trim().to_string()
}

fn unquote(value: &str, quote: char) -> Option<String> {
    let inner = value.strip_prefix(quote)?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            ('\'', '\'') => {
                // '' is an escaped quote; one alone closes the value.
                if chars.as_str().starts_with('\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return closed(out, chars.as_str());
                }
            }
            ('"', '\\') => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            ('"', '"') => return closed(out, chars.as_str()),
            _ => out.push(c),
        }
    }
    None
}

/// After the closing quote only a comment may follow.
fn closed(value: String, rest: &str) -> Option<String> {
    let rest = rest.trim();
    (rest.is_empty() || rest.starts_with('#')).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flat_fields_with_their_lines() {
        let doc = parse(
            "---\ndescription: Review the diff # why\nargument-hint: \"[file] [focus]\"\nmodel: 'it''s'\n---\nBody $1\n",
        )
        .unwrap();
        assert!(doc.has_front_matter);
        assert_eq!(doc.value("description").as_deref(), Some("Review the diff"));
        assert_eq!(doc.get("argument-hint").unwrap().line, 3);
        assert_eq!(
            doc.value("argument-hint").as_deref(),
            Some("[file] [focus]")
        );
        assert_eq!(doc.value("model").as_deref(), Some("it's"));
        assert_eq!(doc.body, "Body $1\n");
    }

    #[test]
    fn block_scalars_continuations_and_nested_blocks() {
        let doc = parse(
            "---\nname: pdf\ndescription: >\n  Fill PDF forms\n  and extract text.\nlong: first\n  second\nmetadata:\n  author: me\nallowed-tools:\n  - Read\n---\n",
        )
        .unwrap();
        assert_eq!(
            doc.value("description").as_deref(),
            Some("Fill PDF forms and extract text.")
        );
        assert_eq!(doc.value("long").as_deref(), Some("first second"));
        assert_eq!(doc.value("metadata").as_deref(), Some("author: me"));
        assert_eq!(doc.body, "");
    }

    #[test]
    fn no_front_matter_is_all_body() {
        let doc = parse("Just do it: $ARGUMENTS\n").unwrap();
        assert!(!doc.has_front_matter);
        assert_eq!(doc.body, "Just do it: $ARGUMENTS\n");
        assert!(doc.fields.is_empty());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("---\nname: x\nthis is not yaml\n---\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected `key: value`"), "{e}");
        assert_eq!(parse("---\nname: x\n").unwrap_err().line, 1);
        assert_eq!(
            parse("---\ndescription: \"open\n---\n").unwrap_err().line,
            2
        );
        assert_eq!(parse("---\nname: a\nname: b\n---\n").unwrap_err().line, 3);
        assert_eq!(parse("---\n  stray\n---\n").unwrap_err().line, 2);
    }
}
