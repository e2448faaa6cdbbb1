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

fn html_to_markdown(html: &str) -> Result<String, String> {
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
    fn text_stays_and_binary_is_refused() {
        assert_eq!(
            to_text("application/json", b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        let refused = to_text("image/png", &[0x89, b'P', b'N', b'G']).unwrap_err();
        assert!(refused.contains("image/png"), "{refused}");
    }
}
