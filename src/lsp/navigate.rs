//! The questions the `lsp` tool asks a server about a file — where a name is defined, where
//! it is used, what it is (hover), the file's symbols, the workspace's symbols matching a
//! query — and the answers as places (`path`, 1-based line and character column, the line's
//! text) or text.

use super::Lsp;
use super::location::{Encoding, column_of, path_of, position_in};
use super::server::{Capabilities, NotReady, Server};
use lsp_types::request::{
    DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};
use lsp_types::{
    DocumentSymbolResponse, GotoDefinitionResponse, HoverContents, MarkedString, OneOf,
    TextDocumentIdentifier, TextDocumentPositionParams, WorkspaceSymbolResponse,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a question may wait for its server to start, and then for its answer.
const START_WAIT: Duration = Duration::from_secs(30);
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// Where a question points: a line, and a column or a piece of text on that line.
#[derive(Clone, Debug)]
pub struct Spot {
    /// 1-based.
    pub line: usize,
    /// 1-based character column.
    pub column: Option<usize>,
    /// Text on the line to point at (its first occurrence), instead of a column.
    pub symbol: Option<String>,
}

#[derive(Clone, Debug)]
pub enum Question {
    Definition(Spot),
    References(Spot),
    Hover(Spot),
    DocumentSymbols,
    WorkspaceSymbols(String),
}

/// A place in a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    /// The line's text, trimmed.
    pub context: Option<String>,
    /// What is there (`function main`), for symbols; indented by depth in a file's outline.
    pub label: Option<String>,
}

#[derive(Clone, Debug)]
pub enum Answer {
    Places(Vec<Place>),
    Text(String),
}

impl Question {
    fn wants(&self, capabilities: &Capabilities) -> bool {
        match self {
            Question::Definition(_) => capabilities.definition,
            Question::References(_) => capabilities.references,
            Question::Hover(_) => capabilities.hover,
            Question::DocumentSymbols => capabilities.document_symbol,
            Question::WorkspaceSymbols(_) => capabilities.workspace_symbol,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Question::Definition(_) => "definition",
            Question::References(_) => "references",
            Question::Hover(_) => "hover",
            Question::DocumentSymbols => "document_symbols",
            Question::WorkspaceSymbols(_) => "workspace_symbols",
        }
    }
}

/// Ask `question` about `path` (for workspace symbols, the file only chooses the server).
pub async fn ask(
    lsp: &Lsp,
    path: &Path,
    question: &Question,
    cancel: &CancellationToken,
) -> Result<Answer, String> {
    let servers = lsp.servers_for(path);
    if servers.is_empty() {
        return Err(format!(
            "no language server is configured or installed for {} files (see /lsp and [lsp] in config.toml)",
            match super::location::extension(path).as_str() {
                "" => "these".to_string(),
                extension => format!(".{extension}"),
            }
        ));
    }
    let deadline = Instant::now() + START_WAIT;
    let mut reasons = Vec::new();
    for server in servers {
        let (connection, capabilities) = match server.ready(deadline, cancel).await {
            Ok(ready) => ready,
            Err(NotReady::Cancelled) => return Err(crate::tools::CANCELLED_TEXT.to_string()),
            Err(not_ready) => {
                reasons.push(format!("{}: {}", server.name(), describe(&not_ready)));
                continue;
            }
        };
        if !question.wants(&capabilities) {
            reasons.push(format!(
                "{} does not answer `{}`",
                server.name(),
                question.name()
            ));
            continue;
        }
        let synced = server.sync(&connection, &capabilities, path).await?;
        let asking = ask_server(
            &server,
            &connection,
            capabilities.encoding,
            path,
            &synced.text,
            question,
        );
        return tokio::select! {
            answer = asking => answer,
            () = cancel.cancelled() => Err(crate::tools::CANCELLED_TEXT.to_string()),
        };
    }
    Err(reasons.join("; "))
}

fn describe(not_ready: &NotReady) -> String {
    match not_ready {
        NotReady::Starting => format!(
            "still starting after {} s; try again shortly",
            START_WAIT.as_secs()
        ),
        NotReady::Restarting(why) => format!("it stopped ({why}); it starts again on a later use"),
        NotReady::Failed(why) => format!("not available: {why}"),
        NotReady::Stopped => "stopped".to_string(),
        NotReady::Cancelled => crate::tools::CANCELLED_TEXT.to_string(),
    }
}

async fn ask_server(
    server: &Arc<Server>,
    connection: &super::rpc::Connection,
    encoding: Encoding,
    path: &Path,
    text: &str,
    question: &Question,
) -> Result<Answer, String> {
    let uri = super::location::uri_of(path)
        .ok_or_else(|| format!("{} is not a file path", path.display()))?;
    let document = TextDocumentIdentifier { uri };
    let at = |spot: &Spot| -> Result<TextDocumentPositionParams, String> {
        Ok(TextDocumentPositionParams {
            text_document: document.clone(),
            position: position_in(text, spot.line, column_at(text, spot)?, encoding),
        })
    };
    let failed = |e: super::rpc::RpcError| format!("{} could not answer: {e}", server.name());
    let mut files = Files::new(server, encoding);
    match question {
        Question::Definition(spot) => {
            let params = lsp_types::GotoDefinitionParams {
                text_document_position_params: at(spot)?,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let answer = connection
                .call::<GotoDefinition>(params, ANSWER_WAIT)
                .await
                .map_err(failed)?;
            let locations: Vec<(lsp_types::Uri, lsp_types::Position)> = match answer {
                None => Vec::new(),
                Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range.start)],
                Some(GotoDefinitionResponse::Array(list)) => {
                    list.into_iter().map(|l| (l.uri, l.range.start)).collect()
                }
                Some(GotoDefinitionResponse::Link(links)) => links
                    .into_iter()
                    .map(|l| (l.target_uri, l.target_selection_range.start))
                    .collect(),
            };
            Ok(Answer::Places(files.places(locations)))
        }
        Question::References(spot) => {
            let params = lsp_types::ReferenceParams {
                text_document_position: at(spot)?,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
                context: lsp_types::ReferenceContext {
                    include_declaration: true,
                },
            };
            let answer = connection
                .call::<References>(params, ANSWER_WAIT)
                .await
                .map_err(failed)?;
            let locations = answer
                .unwrap_or_default()
                .into_iter()
                .map(|l| (l.uri, l.range.start))
                .collect();
            Ok(Answer::Places(files.places(locations)))
        }
        Question::Hover(spot) => {
            let params = lsp_types::HoverParams {
                text_document_position_params: at(spot)?,
                work_done_progress_params: Default::default(),
            };
            let answer = connection
                .call::<HoverRequest>(params, ANSWER_WAIT)
                .await
                .map_err(failed)?;
            Ok(Answer::Text(answer.map(hover_text).unwrap_or_default()))
        }
        Question::DocumentSymbols => {
            let params = lsp_types::DocumentSymbolParams {
                text_document: document.clone(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let answer = connection
                .call::<DocumentSymbolRequest>(params, ANSWER_WAIT)
                .await
                .map_err(failed)?;
            let mut places = Vec::new();
            match answer {
                None => {}
                Some(DocumentSymbolResponse::Flat(list)) => {
                    for symbol in list {
                        let label = format!("{} {}", kind(symbol.kind), symbol.name);
                        places.extend(files.labelled(
                            symbol.location.uri,
                            symbol.location.range.start,
                            label,
                        ));
                    }
                }
                Some(DocumentSymbolResponse::Nested(list)) => {
                    let mut stack: Vec<(usize, lsp_types::DocumentSymbol)> =
                        list.into_iter().rev().map(|s| (0, s)).collect();
                    while let Some((depth, symbol)) = stack.pop() {
                        let label = format!(
                            "{}{} {}",
                            "  ".repeat(depth),
                            kind(symbol.kind),
                            symbol.name
                        );
                        places.extend(files.labelled(
                            document.uri.clone(),
                            symbol.selection_range.start,
                            label,
                        ));
                        for child in symbol.children.unwrap_or_default().into_iter().rev() {
                            stack.push((depth + 1, child));
                        }
                    }
                }
            }
            Ok(Answer::Places(places))
        }
        Question::WorkspaceSymbols(query) => {
            let params = lsp_types::WorkspaceSymbolParams {
                query: query.clone(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let answer = connection
                .call::<WorkspaceSymbolRequest>(params, ANSWER_WAIT)
                .await
                .map_err(failed)?;
            let mut places = Vec::new();
            match answer {
                None => {}
                Some(WorkspaceSymbolResponse::Flat(list)) => {
                    for symbol in list {
                        let label = format!("{} {}", kind(symbol.kind), symbol.name);
                        places.extend(files.labelled(
                            symbol.location.uri,
                            symbol.location.range.start,
                            label,
                        ));
                    }
                }
                Some(WorkspaceSymbolResponse::Nested(list)) => {
                    for symbol in list {
                        let label = format!("{} {}", kind(symbol.kind), symbol.name);
                        let (uri, start) = match symbol.location {
                            OneOf::Left(location) => (location.uri, location.range.start),
                            OneOf::Right(place) => (place.uri, lsp_types::Position::default()),
                        };
                        places.extend(files.labelled(uri, start, label));
                    }
                }
            }
            Ok(Answer::Places(places))
        }
    }
}

/// The 1-based character column a spot points at: its column, the start of its symbol on
/// the line, or the line's first non-blank character.
pub fn column_at(text: &str, spot: &Spot) -> Result<usize, String> {
    let Some(line) = text.lines().nth(spot.line.saturating_sub(1)) else {
        return Err(format!(
            "line {} is past the end of the file ({} lines)",
            spot.line,
            text.lines().count()
        ));
    };
    if let Some(column) = spot.column {
        return Ok(column.max(1));
    }
    if let Some(symbol) = spot.symbol.as_deref().filter(|s| !s.is_empty()) {
        return match line.find(symbol) {
            Some(at) => Ok(line[..at].chars().count() + 1),
            None => Err(format!(
                "`{symbol}` is not on line {}: {}",
                spot.line,
                crate::tools::truncate::clip(line.trim(), 200)
            )),
        };
    }
    Ok(line.chars().take_while(|c| c.is_whitespace()).count() + 1)
}

fn kind(kind: lsp_types::SymbolKind) -> String {
    format!("{kind:?}").to_lowercase().replace('_', " ")
}

fn hover_text(hover: lsp_types::Hover) -> String {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(list) => list
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    }
}

/// The lines of the files answers point into, each file read once.
struct Files<'a> {
    server: &'a Arc<Server>,
    encoding: Encoding,
    lines: HashMap<PathBuf, Option<Vec<String>>>,
}

impl<'a> Files<'a> {
    fn new(server: &'a Arc<Server>, encoding: Encoding) -> Files<'a> {
        Files {
            server,
            encoding,
            lines: HashMap::new(),
        }
    }

    fn line(&mut self, path: &Path, index: usize) -> Option<&str> {
        let server = self.server;
        let lines = self.lines.entry(path.to_path_buf()).or_insert_with(|| {
            let text = match server.open_text(path) {
                Some(text) => text.to_string(),
                None => {
                    let small =
                        std::fs::metadata(path).is_ok_and(|m| m.len() <= super::server::MAX_FILE);
                    if !small {
                        return None;
                    }
                    String::from_utf8_lossy(&std::fs::read(path).ok()?).into_owned()
                }
            };
            Some(text.lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get(index).map(String::as_str)
    }

    fn place(&mut self, uri: lsp_types::Uri, start: lsp_types::Position) -> Option<Place> {
        let path = path_of(&uri)?;
        let index = usize::try_from(start.line).ok()?;
        let encoding = self.encoding;
        let line = self.line(&path, index).map(str::to_string);
        let column = line
            .as_deref()
            .map(|l| column_of(l, start.character, encoding))
            .unwrap_or_else(|| usize::try_from(start.character).unwrap_or(0) + 1);
        Some(Place {
            path,
            line: index + 1,
            column,
            context: line.map(|l| crate::tools::truncate::clip(l.trim(), 300).to_string()),
            label: None,
        })
    }

    fn places(&mut self, locations: Vec<(lsp_types::Uri, lsp_types::Position)>) -> Vec<Place> {
        locations
            .into_iter()
            .filter_map(|(uri, start)| self.place(uri, start))
            .collect()
    }

    fn labelled(
        &mut self,
        uri: lsp_types::Uri,
        start: lsp_types::Position,
        label: String,
    ) -> Option<Place> {
        let mut place = self.place(uri, start)?;
        place.label = Some(label);
        Some(place)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spot_is_a_column_a_symbol_or_the_line_start() {
        let text = "fn main() {\n    let value = other(1);\n}\n";
        let spot = |column, symbol: Option<&str>| Spot {
            line: 2,
            column,
            symbol: symbol.map(String::from),
        };
        assert_eq!(column_at(text, &spot(Some(9), None)).unwrap(), 9);
        assert_eq!(column_at(text, &spot(None, Some("other"))).unwrap(), 17);
        assert_eq!(column_at(text, &spot(None, None)).unwrap(), 5);
        assert!(column_at(text, &spot(None, Some("nope"))).is_err());
        let far = Spot {
            line: 9,
            column: None,
            symbol: None,
        };
        assert!(column_at(text, &far).unwrap_err().contains("3 lines"));
    }
}
