//! A fetched body as text the model can read: HTML becomes Markdown (`htmd`; scripts,
//! styles and other non-content elements left out), other text stays as it is, and
//! anything else (images, PDFs, archives) is refused with what it is.

/// The body as text, or why it cannot be shown.
pub fn to_text(content_type: &str, body: &[u8]) -> Result<String, String> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let text = String::from_utf8_lossy(body);
    let looks_like_html = mime.is_empty()
        && text.trim_start().get(..15).is_some_and(|start| {
            start.to_ascii_lowercase().starts_with("<!doctype html")
                || start.to_ascii_lowercase().starts_with("<html")
        });
    if mime == "text/html" || mime == "application/xhtml+xml" || looks_like_html {
        return html_to_markdown(&text);
    }
    let textual = mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/x-yaml",
            "application/yaml",
            "application/toml",
        ]
        .contains(&mime.as_str());
    if textual {
        return Ok(text.into_owned());
    }
    Err(format!(
        "the page is not text but `{mime}` ({} bytes), which web_fetch does not read",
        body.len()
    ))
}

/// Deeper than this, a page is read as plain text: the HTML-to-Markdown walk recurses once
/// per level (a hostile page of nested `<div>`s would overflow the stack) and looks up the
/// ancestors of every node (quadratic in the depth).
const MAX_HTML_DEPTH: usize = 256;

fn html_to_markdown(html: &str) -> Result<String, String> {
    if nesting_depth(html) > MAX_HTML_DEPTH {
        return Ok(collapse_blank_lines(&plain_text(html)));
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head", "nav",
            "footer", "form",
        ])
        .build();
    let markdown = converter
        .convert(html)
        .map_err(|e| format!("the HTML could not be read: {e}"))?;
    Ok(collapse_blank_lines(&markdown))
}

/// Elements without content, and those whose end tag may be left out: neither nests.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "tbody", "thead", "tfoot", "colgroup", "caption", "rb", "rt", "rp", "!doctype",
];

/// How deep the page's elements nest, counted from its tags without building a tree (a
/// single pass, no recursion).
fn nesting_depth(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'<', &bytes[at..]) {
        let tag_start = at + offset + 1;
        let Some(close) = memchr::memchr(b'>', &bytes[tag_start..]) else {
            break;
        };
        let tag = &html[tag_start..tag_start + close];
        at = tag_start + close + 1;
        if let Some(rest) = tag.strip_prefix('/') {
            if !NOT_NESTING.contains(&tag_name(rest).as_str()) {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        let name = tag_name(tag);
        if name.is_empty()
            || name.starts_with('!')
            || name.starts_with('?')
            || tag.ends_with('/')
            || NOT_NESTING.contains(&name.as_str())
        {
            continue;
        }
        depth += 1;
        deepest = deepest.max(depth);
    }
    deepest
}

fn tag_name(tag: &str) -> String {
    tag.split(|c: char| c.is_ascii_whitespace() || c == '/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The text of a page with its tags left out, for pages too deep to convert.
fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split('\n')
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most one blank line in a row (converted pages are often mostly empty lines).
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let html = "<html><head><title>T</title><script>alert(1)</script></head><body>\
                    <h1>Title</h1><p>Some <b>bold</b> text and a <a href=\"/x\">link</a>.</p>\
                    <ul><li>one</li><li>two</li></ul></body></html>";
        let text = to_text("text/html; charset=utf-8", html.as_bytes()).unwrap();
        assert!(text.starts_with("# Title"), "{text}");
        assert!(
            text.contains("Some **bold** text and a [link](/x)."),
            "{text}"
        );
        assert!(text.contains("one") && text.contains("two"), "{text}");
        assert!(!text.contains("alert"), "{text}");
    }

    #[test]
    fn a_deeply_nested_page_is_read_as_plain_text_without_recursing() {
        let depth = 100_000;
        let html = format!(
            "<html><body>{}<b>deep</b> text{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        assert!(nesting_depth(&html) > depth);
        let text = to_text("text/html", html.as_bytes()).unwrap();
        assert_eq!(text.trim(), "deep text");
    }

    #[test]
    fn ordinary_pages_are_shallow() {
        let html = "<!DOCTYPE html><html><body><p>a<p>b<br><img src=x><ul><li>1<li>2</ul>\
                    <div><span>x</span><hr/></div></body></html>";
        assert_eq!(nesting_depth(html), 4); // html body div span
    }

    #[test]
    fn text_stays_and_binary_is_refused() {
        assert_eq!(
            to_text("application/json", b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        let refused = to_text("image/png", &[0x89, b'P', b'N', b'G']).unwrap_err();
        assert!(refused.contains("image/png"), "{refused}");
    }
}
