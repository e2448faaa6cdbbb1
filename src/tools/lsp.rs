//! `lsp`: ask the language server of a file (src/lsp) where a name is defined, where it is
//! used, what it is, what the file declares, which symbols of the workspace match a query,
//! or what is wrong with the file now. Places come back as `path:line:col: the line`. It only
//! looks (read-only, runs beside other read-only calls); a file the permission rules hide
//! from reads and searches is not asked about, and places in such files are left out (the
//! answer says how many). Offered only when a server can run for the workspace (`[lsp]`).

use super::path::{display, resolve};
use super::{Subject, Tool, ToolContext, ToolOutput, parse_args};
use crate::lsp::navigate::{self, Answer, Question, Spot};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

pub const NAME: &str = "lsp";

/// Places listed at most.
const MAX_PLACES: usize = 100;
/// Hover text kept at most (bytes).
const MAX_HOVER: usize = 8000;
/// How long `diagnostics` waits for a server that is busy or starting.
const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(10);

pub struct LspTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    line: Option<usize>,
    #[serde(default)]
    column: Option<usize>,
    #[serde(default)]
    symbol: Option<String>,
    #[serde(default)]
    query: Option<String>,
}

const OPERATIONS: &[&str] = &[
    "definition",
    "references",
    "hover",
    "document_symbols",
    "workspace_symbols",
    "diagnostics",
];

impl Tool for LspTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Ask the language server of a file. `definition`, `references` and `hover` point at a \
         name: give `path`, `line` (1-based) and either `symbol` (the name as written on that \
         line) or `column` (1-based). `document_symbols` outlines `path`; `workspace_symbols` \
         finds symbols matching `query` (with `path`, any file of the language, choosing the \
         server); `diagnostics` lists the file's errors and warnings now. Places come back \
         as path:line:col with the line's text. Prefer it to grep for where something is \
         defined or used."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": OPERATIONS},
                "path": {"type": "string", "description": "The file to ask about"},
                "line": {"type": "integer", "minimum": 1, "description": "1-based line (definition, references, hover)"},
                "symbol": {"type": "string", "description": "The name to point at, as written on that line"},
                "column": {"type": "integer", "minimum": 1, "description": "1-based column, instead of symbol"},
                "query": {"type": "string", "description": "What to look for (workspace_symbols)"}
            },
            "required": ["operation"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn subject(&self) -> Subject {
        Subject::Path("path")
    }

    fn summarize(&self, args: &Value) -> String {
        let operation = args.get("operation").and_then(Value::as_str).unwrap_or("?");
        let path = self.subject().value(args).unwrap_or("");
        let line = args.get("line").and_then(Value::as_u64);
        let at = args
            .get("symbol")
            .and_then(Value::as_str)
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        match (operation, line) {
            ("workspace_symbols", _) => format!(
                "{operation} {}",
                args.get("query").and_then(Value::as_str).unwrap_or("")
            ),
            (_, Some(line)) => format!("{operation} {path}:{line}{at}"),
            _ => format!("{operation} {path}"),
        }
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args(NAME, args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            run(args, ctx).await
        })
    }
}

async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let Some(lsp) = ctx.settings.lsp.clone() else {
        return ToolOutput::error(
            "No language servers are available here ([lsp] in config.toml; /lsp lists them).",
        );
    };
    let Some(raw) = args.path.as_deref().filter(|p| !p.trim().is_empty()) else {
        return ToolOutput::error(format!(
            "`{}` needs `path`: the file to ask about{}.",
            args.operation,
            if args.operation == "workspace_symbols" {
                " (any file of the language, to choose its server)"
            } else {
                ""
            }
        ));
    };
    let path = resolve(&ctx.cwd, raw);
    if !path.is_file() {
        return ToolOutput::error(super::path::not_found_message(&ctx.cwd, &path));
    }
    // A file the rules keep from reads and searches is not shown through its server either.
    if let Some(rules) = &ctx.hidden
        && rules.hides(&path, None)
    {
        return ToolOutput::error(format!(
            "{} is hidden by the permission rules (a deny or ask rule on reading it), so              its language server is not asked about it.",
            display(&ctx.cwd, &path)
        ));
    }
    let spot = || -> Result<Spot, ToolOutput> {
        let line = args.line.ok_or_else(|| {
            ToolOutput::error(format!(
                "`{}` needs `line` (1-based) and `symbol` or `column`.",
                args.operation
            ))
        })?;
        Ok(Spot {
            line,
            column: args.column,
            symbol: args.symbol.clone(),
        })
    };
    let question = match args.operation.as_str() {
        "definition" => Question::Definition(match spot() {
            Ok(spot) => spot,
            Err(output) => return output,
        }),
        "references" => Question::References(match spot() {
            Ok(spot) => spot,
            Err(output) => return output,
        }),
        "hover" => Question::Hover(match spot() {
            Ok(spot) => spot,
            Err(output) => return output,
        }),
        "document_symbols" => Question::DocumentSymbols,
        "workspace_symbols" => Question::WorkspaceSymbols(args.query.clone().unwrap_or_default()),
        "diagnostics" => {
            let reports = lsp.diagnostics(&path, DIAGNOSTICS_WAIT, &ctx.cancel).await;
            if reports.is_empty() {
                return ToolOutput::error(format!(
                    "No language server is configured or installed for {} (see /lsp).",
                    display(&ctx.cwd, &path)
                ));
            }
            let mut output = ToolOutput::text("");
            output.content.clear();
            crate::lsp::report::attach(&mut output, &reports, &ctx.cwd);
            return output;
        }
        other => {
            return ToolOutput::error(format!(
                "Unknown operation `{other}` (one of: {}).",
                OPERATIONS.join(", ")
            ));
        }
    };
    match navigate::ask(&lsp, &path, &question, &ctx.cancel).await {
        Err(why) => ToolOutput::error(why),
        Ok(Answer::Text(text)) if text.trim().is_empty() => {
            ToolOutput::text("The server has nothing to say about that position.")
        }
        Ok(Answer::Text(text)) => {
            let clipped = crate::tools::truncate::clip(&text, MAX_HOVER);
            ToolOutput::text(if clipped.len() < text.len() {
                format!("{clipped}\n… (cut)")
            } else {
                text
            })
        }
        Ok(Answer::Places(places)) => ToolOutput::text(places_text(&places, &ctx)),
    }
}

fn places_text(places: &[navigate::Place], ctx: &ToolContext) -> String {
    let mut hidden = 0;
    let mut lines = Vec::new();
    for place in places {
        if let Some(rules) = &ctx.hidden
            && rules.hides(&place.path, None)
        {
            hidden += 1;
            continue;
        }
        let at = format!(
            "{}:{}:{}",
            display(&ctx.cwd, &place.path),
            place.line,
            place.column
        );
        lines.push(match (&place.label, &place.context) {
            (Some(label), _) => format!("{label} — {at}"),
            (None, Some(context)) => format!("{at}: {context}"),
            (None, None) => at,
        });
    }
    let total = lines.len();
    if total > MAX_PLACES {
        lines.truncate(MAX_PLACES);
        lines.push(format!("… and {} more", total - MAX_PLACES));
    }
    if hidden > 0 {
        lines.push(super::visibility::hidden_note(hidden));
    }
    if lines.is_empty() {
        "Nothing found.".to_string()
    } else {
        lines.join("\n")
    }
}
