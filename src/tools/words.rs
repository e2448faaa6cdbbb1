//! The words of a simple command as bash will run them, so that a rule matches the command
//! however it is spelled: quotes and backslashes removed (`\rm`, `r''m`, `"rm"`,
//! `$'\x72m'` are all `rm`), brace expansion done (`{rm,-rf,x}` is three words,
//! `rm{,}` two). A word with an expansion (`$X`, `$(…)`) is not a literal: its value is
//! only known when it runs. A word that is a file-name pattern (`r?`, `/bin/r[m]`) is not
//! one either, since its value depends on the files there when it runs.
//!
//! Brace expansion is written by hand: the crates that do it follow other shells' rules,
//! and only bash's matter here (quoted braces and commas do not count).

use tree_sitter::Node;

/// One word of a simple command: its value when it is a literal, else the source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub literal: bool,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            literal: true,
        }
    }

    pub fn unknown(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            literal: false,
        }
    }

    /// The word as a rule sees it: a literal with characters the shell treats specially is
    /// shown single-quoted (`'a b'`), anything else as it is.
    pub fn shown(&self) -> String {
        if !self.literal || self.text.chars().all(plain) && !self.text.is_empty() {
            return self.text.clone();
        }
        format!("'{}'", self.text.replace('\'', r"'\''"))
    }
}

fn plain(c: char) -> bool {
    c.is_alphanumeric() || "_-./:=@%+,^~".contains(c)
}

/// At most this many words come out of one word's brace expansion; more and the word is
/// treated as only known when it runs.
const MAX_EXPANSION: usize = 256;

/// One character of a word and whether the shell gives it a meaning there (unquoted and
/// not escaped).
type Chars = Vec<(char, bool)>;

/// The words `node` (an argument or command name) becomes.
pub fn of_node(node: Node<'_>, source: &[u8]) -> Vec<Word> {
    let text = node.utf8_text(source).unwrap_or_default();
    let Some(chars) = chars(node, source) else {
        return vec![Word::unknown(text)];
    };
    let Some(expanded) = expand_braces(&chars) else {
        return vec![Word::unknown(text)];
    };
    expanded
        .into_iter()
        .map(|chars| {
            if is_pattern(&chars) {
                Word::unknown(chars.iter().map(|(c, _)| *c).collect::<String>())
            } else {
                Word::literal(chars.iter().map(|(c, _)| *c).collect::<String>())
            }
        })
        .collect()
}

/// The value of `node` as one literal string, if it is one (no expansion, no brace
/// expansion, no pattern).
pub fn literal(node: Node<'_>, source: &[u8]) -> Option<String> {
    match of_node(node, source).as_slice() {
        [word] if word.literal => Some(word.text.clone()),
        _ => None,
    }
}

fn chars(node: Node<'_>, source: &[u8]) -> Option<Chars> {
    let text = node.utf8_text(source).ok()?;
    let mut cursor = node.walk();
    match node.kind() {
        "word" => Some(unescape(text)),
        "number" | "brace_expression" => Some(text.chars().map(|c| (c, true)).collect()),
        "raw_string" => Some(
            text.strip_prefix('\'')?
                .strip_suffix('\'')?
                .chars()
                .map(|c| (c, false))
                .collect(),
        ),
        "string" => {
            if node
                .named_children(&mut cursor)
                .any(|c| c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            Some(unescape_quoted(inner).chars().map(|c| (c, false)).collect())
        }
        "ansi_c_string" => {
            let inner = text.strip_prefix("$'")?.strip_suffix('\'')?;
            Some(ansi_c(inner).chars().map(|c| (c, false)).collect())
        }
        "concatenation" | "command_name" => {
            let mut all = Vec::new();
            for child in node.named_children(&mut cursor) {
                all.extend(chars(child, source)?);
            }
            (!all.is_empty()).then_some(all)
        }
        _ => None,
    }
}

/// An unquoted word: a backslash quotes the next character (and with a newline vanishes).
fn unescape(text: &str) -> Chars {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(next)) => {
                out.push((next, false));
                chars.next();
            }
            _ => out.push((c, true)),
        }
    }
    out
}

/// Inside double quotes a backslash quotes only `"`, `\`, `$`, `` ` `` and a newline.
fn unescape_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(next)) if matches!(next, '"' | '\\' | '$' | '`') => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The value of `$'…'`: bash's backslash escapes.
fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let digits = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max| {
            let mut value = 0u32;
            let mut count = 0;
            while count < max {
                match chars.peek().and_then(|d| d.to_digit(radix)) {
                    Some(d) => {
                        value = value * radix + d;
                        chars.next();
                        count += 1;
                    }
                    None => break,
                }
            }
            (count > 0).then_some(value)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'c' => {
                if let Some(control) = chars.next() {
                    out.push(char::from((control as u32 & 0x1f) as u8));
                }
            }
            'x' => match digits(&mut chars, 16, 2) {
                Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                None => out.push_str("\\x"),
            },
            'u' | 'U' => {
                let max = if e == 'u' { 4 } else { 8 };
                match digits(&mut chars, 16, max) {
                    Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                    None => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value & 0xff).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Whether the word is a file-name pattern: an unquoted `*` or `?`, or an unquoted `[`
/// closed later by an unquoted `]`.
fn is_pattern(chars: &[(char, bool)]) -> bool {
    let mut open = false;
    for (c, active) in chars {
        if !active {
            continue;
        }
        match c {
            '*' | '?' => return true,
            '[' => open = true,
            ']' if open => return true,
            _ => {}
        }
    }
    false
}

/// Bash's brace expansion of one word: `a{b,c}d` → `abd acd`, `{1..3}` → `1 2 3`, nested
/// and repeated braces too. `None` when it would give more than `MAX_EXPANSION` words.
fn expand_braces(chars: &[(char, bool)]) -> Option<Vec<Chars>> {
    let mut out = Vec::new();
    expand_into(chars.to_vec(), &mut out)?;
    Some(out)
}

fn expand_into(chars: Chars, out: &mut Vec<Chars>) -> Option<()> {
    let Some((open, close, alternatives)) = first_brace(&chars) else {
        if out.len() >= MAX_EXPANSION {
            return None;
        }
        out.push(chars);
        return Some(());
    };
    if alternatives.is_empty() {
        return None;
    }
    for alternative in alternatives {
        let mut word = chars[..open].to_vec();
        word.extend(alternative);
        word.extend_from_slice(&chars[close + 1..]);
        expand_into(word, out)?;
    }
    Some(())
}

/// The first brace expression in `chars` that expands: where it opens and closes and what
/// it stands for.
fn first_brace(chars: &[(char, bool)]) -> Option<(usize, usize, Vec<Chars>)> {
    let mut start = 0;
    while let Some(offset) = chars[start..]
        .iter()
        .position(|&(c, active)| active && c == '{')
    {
        let open = start + offset;
        // `${` is a parameter expansion, not a brace expression.
        let after_dollar = open > 0 && chars[open - 1] == ('$', true);
        if let Some(close) = matching_brace(chars, open)
            && !after_dollar
        {
            let body = &chars[open + 1..close];
            let parts = split_commas(body);
            if parts.len() > 1 {
                return Some((open, close, parts));
            }
            match sequence(body) {
                Ok(Some(sequence)) => return Some((open, close, sequence)),
                Ok(None) => {}
                // Too long to expand here: the caller sees one word left unexpanded.
                Err(TooLong) => return Some((open, close, Vec::new())),
            }
        }
        start = open + 1;
    }
    None
}

fn matching_brace(chars: &[(char, bool)], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &(c, active)) in chars.iter().enumerate().skip(open) {
        if !active {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `body` split at its unquoted commas outside nested braces.
fn split_commas(body: &[(char, bool)]) -> Vec<Chars> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0usize;
    for &(c, active) in body {
        match (c, active) {
            ('{', true) => depth += 1,
            ('}', true) => depth = depth.saturating_sub(1),
            (',', true) if depth == 0 => {
                parts.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push((c, active));
        }
    }
    parts
}

/// `1..5`, `1..10..2`, `01..10`, `a..e`: the words of a sequence expression.
/// `Err` when it has more than `MAX_EXPANSION` words.
fn sequence(body: &[(char, bool)]) -> Result<Option<Vec<Chars>>, TooLong> {
    if body.iter().any(|(_, active)| !active) {
        return Ok(None);
    }
    let text: String = body.iter().map(|(c, _)| *c).collect();
    let parts: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [from, to] => (*from, *to, None),
        [from, to, step] => match step.parse::<i64>() {
            Ok(step) => (*from, *to, Some(step)),
            Err(_) => return Ok(None),
        },
        _ => return Ok(None),
    };
    let step = step.unwrap_or(1).unsigned_abs().max(1);
    let words: Vec<String> = if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_EXPANSION as u64 {
            return Err(TooLong);
        }
        let width = if [from, to]
            .iter()
            .any(|s| s.trim_start_matches('-').starts_with('0') && s.len() > 1)
        {
            from.len().max(to.len())
        } else {
            0
        };
        (0..count)
            .map(|k| {
                let offset = i64::try_from(k * step).unwrap_or(i64::MAX);
                let value = if a <= b { a + offset } else { a - offset };
                format!("{value:0width$}")
            })
            .collect()
    } else {
        let (mut a, mut b) = (from.chars(), to.chars());
        let (Some(a), None, Some(b), None) = (a.next(), a.next(), b.next(), b.next()) else {
            return Ok(None);
        };
        let (a, b) = (a as u32, b as u32);
        let Ok(step) = u32::try_from(step) else {
            return Ok(None);
        };
        let count = a.abs_diff(b) / step + 1;
        (0..count)
            .filter_map(|k| char::from_u32(if a <= b { a + k * step } else { a - k * step }))
            .map(String::from)
            .collect()
    };
    Ok(Some(
        words
            .into_iter()
            .map(|w| w.chars().map(|c| (c, true)).collect())
            .collect(),
    ))
}

/// A brace sequence too long to expand.
struct TooLong;

#[cfg(test)]
mod tests {
    use super::*;
    use tree_sitter::Parser;

    /// The words of the first simple command of `command`.
    fn words(command: &str) -> Vec<Word> {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .unwrap();
        let tree = parser.parse(command, None).unwrap();
        let node = tree.root_node().named_child(0).unwrap();
        assert_eq!(node.kind(), "command", "{command}");
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .flat_map(|child| of_node(child, command.as_bytes()))
            .collect()
    }

    fn texts(command: &str) -> Vec<String> {
        words(command)
            .into_iter()
            .map(|w| {
                if w.literal {
                    w.text
                } else {
                    format!("?{}", w.text)
                }
            })
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(texts(r"\rm -rf x"), ["rm", "-rf", "x"]);
        assert_eq!(texts("r''m x"), ["rm", "x"]);
        assert_eq!(texts("\"rm\" x"), ["rm", "x"]);
        assert_eq!(texts(r"$'\x72m' $'a\tb' $'\162'"), ["rm", "a\tb", "r"]);
        assert_eq!(texts("echo \"a \\\"b\\\"\""), ["echo", "a \"b\""]);
        assert_eq!(texts("echo \"$HOME\""), ["echo", "?\"$HOME\""]);
    }

    #[test]
    fn braces_expand_and_patterns_are_not_literals() {
        assert_eq!(texts("r{m,} -rf x"), ["rm", "r", "-rf", "x"]);
        assert_eq!(texts("rm{,} x"), ["rm", "rm", "x"]);
        assert_eq!(texts("echo a{b,c{d,e}}f"), ["echo", "abf", "acdf", "acef"]);
        assert_eq!(
            texts("echo {1..3} {a..c}"),
            ["echo", "1", "2", "3", "a", "b", "c"]
        );
        assert_eq!(texts("echo {01..03..2}"), ["echo", "01", "03"]);
        assert_eq!(texts("echo '{a,b}' {} {x}"), ["echo", "{a,b}", "{}", "{x}"]);
        assert_eq!(texts("r? x"), ["?r?", "x"]);
        assert_eq!(texts("/bin/r[m] x"), ["?/bin/r[m]", "x"]);
        assert_eq!(texts("echo '*' \\*"), ["echo", "*", "*"]);
        assert_eq!(texts("echo {1..100000}"), ["echo", "?{1..100000}"]);
    }

    #[test]
    fn words_are_shown_quoted_where_the_shell_would_need_it() {
        assert_eq!(Word::literal("status").shown(), "status");
        assert_eq!(Word::literal("a b").shown(), "'a b'");
        assert_eq!(Word::literal("it's").shown(), r"'it'\''s'");
        assert_eq!(Word::literal("").shown(), "''");
        assert_eq!(Word::unknown("\"$X\"").shown(), "\"$X\"");
    }
}
