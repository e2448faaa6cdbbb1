// The web client's text rendering: Markdown as models write it (headings, lists, quotes,
// tables, fenced code, inline code, emphasis, links), code highlighting by a small tokenizer,
// and unified diffs. Hand-written so the client needs no build step and no library: every
// piece of text is escaped before it becomes HTML, and links go only to http(s) and mailto.
"use strict";

const Render = (() => {
  const escapeHtml = (text) =>
    String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

  // Keywords of the languages models write most; one set is enough to colour them.
  const KEYWORDS = new Set(
    ("as async await break case catch class const continue crate def default defer del do elif else enum export " +
      "extends false fn for from func function go if impl import in interface is let loop match mod move mut new nil " +
      "none not null or pass pub raise return self Self static struct super switch then throw trait true try type " +
      "typeof undefined unsafe use var where while with yield fi done esac local echo package void int bool string " +
      "char long float double u8 u16 u32 u64 usize i32 i64 isize str String Vec Option Some None Ok Err Result True False None")
      .split(" "),
  );
  const HASH_COMMENTS = new Set(["sh", "bash", "zsh", "shell", "console", "python", "py", "ruby", "rb", "toml", "yaml", "yml", "make", "dockerfile", "perl", "r", "conf", "ini"]);
  const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?\*\/|#[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b|\b0x[0-9a-fA-F_]+\b|[A-Za-z_][A-Za-z0-9_]*)/g;

  function highlight(code, lang) {
    lang = (lang || "").toLowerCase();
    if (lang === "diff" || lang === "patch") return diffLines(code);
    const hashComments = HASH_COMMENTS.has(lang);
    let out = "";
    let last = 0;
    TOKEN.lastIndex = 0;
    for (let m; (m = TOKEN.exec(code)); ) {
      const token = m[0];
      out += escapeHtml(code.slice(last, m.index));
      last = m.index + token.length;
      let kind = null;
      if (token.startsWith("//") || token.startsWith("/*")) kind = hashComments ? null : "c";
      else if (token.startsWith("#")) kind = hashComments ? "c" : null;
      else if (/^["'`]/.test(token)) kind = "s";
      else if (/^\d|^0x/.test(token)) kind = "n";
      else if (KEYWORDS.has(token)) kind = "k";
      if (kind === null && (token.startsWith("//") || token.startsWith("#"))) {
        // Not a comment in this language: colour only its first character as text.
        out += escapeHtml(token[0]);
        last = m.index + 1;
        TOKEN.lastIndex = last;
        continue;
      }
      out += kind ? `<span class="t${kind}">${escapeHtml(token)}</span>` : escapeHtml(token);
    }
    return out + escapeHtml(code.slice(last));
  }

  // A unified diff, one line each, coloured by what it does.
  function diffLines(diff) {
    return String(diff)
      .split("\n")
      .map((line) => {
        let kind = "";
        if (line.startsWith("+++") || line.startsWith("---")) kind = "dh";
        else if (line.startsWith("@@")) kind = "dr";
        else if (line.startsWith("+")) kind = "da";
        else if (line.startsWith("-")) kind = "dd";
        return kind ? `<span class="${kind}">${escapeHtml(line)}</span>` : escapeHtml(line);
      })
      .join("\n");
  }

  function safeUrl(url) {
    return /^(https?:|mailto:)/i.test(url) ? url : null;
  }

  // Inline Markdown of one escaped-as-we-go piece of text.
  function inline(text) {
    const codes = [];
    // Code spans first: nothing inside them is Markdown.
    text = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, __, code) => {
      codes.push(`<code>${escapeHtml(code.trim() === "" ? code : code.replace(/^ (.*) $/, "$1"))}</code>`);
      return `\u0000${codes.length - 1}\u0000`;
    });
    text = escapeHtml(text);
    text = text.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (all, label, url) => {
      const href = safeUrl(url.replace(/&amp;/g, "&"));
      return href ? `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${label}</a>` : all;
    });
    text = text.replace(/(^|[\s(])(https?:\/\/[^\s<)]+[^\s<).,;:!?'"])/g, (_, pre, url) =>
      `${pre}<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`,
    );
    text = text
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
      .replace(/__(?=\S)([\s\S]*?\S)__/g, "<strong>$1</strong>")
      .replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?!\*)/g, "$1<em>$2</em>")
      .replace(/(^|[^_\w])_(?=\S)([^_\n]*?\S)_(?![_\w])/g, "$1<em>$2</em>")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
    return text.replace(/\u0000(\d+)\u0000/g, (_, i) => codes[Number(i)]);
  }

  function table(lines) {
    const cells = (line) =>
      line
        .trim()
        .replace(/^\|/, "")
        .replace(/\|$/, "")
        .split("|")
        .map((c) => c.trim());
    const head = cells(lines[0]);
    const rows = lines.slice(2).map(cells);
    return (
      `<table><thead><tr>${head.map((c) => `<th>${inline(c)}</th>`).join("")}</tr></thead><tbody>` +
      rows.map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join("")}</tr>`).join("") +
      "</tbody></table>"
    );
  }

  // Markdown to HTML. An unclosed fence (a message still streaming) runs to the end.
  function markdown(source) {
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let html = "";
    let i = 0;
    const isFence = (line) => /^\s{0,3}(```|~~~)/.test(line);
    const isList = (line) => /^\s*([-*+]|\d+[.)])\s+/.test(line);
    const isBlockStart = (line) =>
      isFence(line) || /^\s{0,3}(#{1,6}\s|>|([-*_])(\s*\3){2,}\s*$)/.test(line) || isList(line);
    while (i < lines.length) {
      const line = lines[i];
      if (/^\s*$/.test(line)) {
        i++;
        continue;
      }
      const fence = line.match(/^\s{0,3}(```+|~~~+)\s*([\w+#.-]*)/);
      if (fence) {
        const close = fence[1];
        const code = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(close)) code.push(lines[i++]);
        i++;
        const lang = fence[2] || "";
        html += `<pre class="code"${lang ? ` data-lang="${escapeHtml(lang)}"` : ""}><code>${highlight(code.join("\n"), lang)}</code></pre>`;
        continue;
      }
      const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
      if (heading) {
        const level = heading[1].length;
        html += `<h${level}>${inline(heading[2])}</h${level}>`;
        i++;
        continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
        html += "<hr>";
        i++;
        continue;
      }
      if (/^\s{0,3}>/.test(line)) {
        const quoted = [];
        while (i < lines.length && /^\s{0,3}>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
        html += `<blockquote>${markdown(quoted.join("\n"))}</blockquote>`;
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
        const rows = [];
        while (i < lines.length && lines[i].includes("|")) rows.push(lines[i++]);
        html += table(rows);
        continue;
      }
      if (isList(line)) {
        const ordered = /^\s*\d+[.)]/.test(line);
        const indent = line.match(/^\s*/)[0].length;
        const items = [];
        while (i < lines.length) {
          const l = lines[i];
          const m = l.match(/^(\s*)([-*+]|\d+[.)])\s+(.*)$/);
          if (m && m[1].length <= indent + 1 && /^\d/.test(m[2]) !== ordered) break;
          if (m && m[1].length <= indent + 1) {
            items.push([m[3]]);
            i++;
          } else if (items.length && (/^\s+\S/.test(l) || (/^\s*$/.test(l) && i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])))) {
            items[items.length - 1].push(l.replace(new RegExp(`^\\s{0,${indent + 4}}`), ""));
            i++;
          } else break;
        }
        const tag = ordered ? "ol" : "ul";
        html += `<${tag}>${items
          .map((item) => {
            const [first, ...rest] = item;
            const task = first.match(/^\[([ xX])\]\s+(.*)$/);
            const head = task
              ? `<input type="checkbox" disabled${task[1] === " " ? "" : " checked"}> ${inline(task[2])}`
              : inline(first);
            return `<li>${head}${rest.length ? markdown(rest.join("\n")) : ""}</li>`;
          })
          .join("")}</${tag}>`;
        continue;
      }
      const paragraph = [];
      while (i < lines.length && !/^\s*$/.test(lines[i]) && !(paragraph.length && isBlockStart(lines[i]))) {
        paragraph.push(lines[i++]);
      }
      html += `<p>${inline(paragraph.join("\n")).replace(/\n/g, "<br>")}</p>`;
    }
    return html;
  }

  return { markdown, highlight, diffLines, escapeHtml };
})();
