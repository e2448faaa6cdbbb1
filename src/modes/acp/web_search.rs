//! A provider-side web search (`[web] search`) as the editor sees it: one tool call of kind
//! `fetch`, created already finished (the search ran on the provider's side, nothing is
//! asked or streamed), titled with the query, listing the pages found.

use crate::protocol::message::{WebSearch, WebSearchStatus};
use agent_client_protocol::v1::schema::{
    SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolKind,
};
use serde_json::json;

/// The `tool_call` update of a search (live, and when a session is loaded).
pub fn update(search: &WebSearch) -> SessionUpdate {
    let status = match search.status {
        WebSearchStatus::Completed => ToolCallStatus::Completed,
        WebSearchStatus::Failed => ToolCallStatus::Failed,
        WebSearchStatus::InProgress => ToolCallStatus::InProgress,
    };
    let pages: Vec<String> = search
        .results
        .iter()
        .map(|result| match result.title.as_str() {
            "" => result.url.clone(),
            title => format!("{title} — {}", result.url),
        })
        .collect();
    let mut text = search.summary();
    if !pages.is_empty() {
        text.push_str("\n\n");
        text.push_str(&pages.join("\n"));
    }
    SessionUpdate::ToolCall(
        ToolCall::new(search.id.clone(), format!("Web search: {}", search.query))
            .name("web_search".to_string())
            .kind(ToolKind::Fetch)
            .status(status)
            .raw_input(json!({ "query": search.query }))
            .raw_output(json!({ "results": search.results, "error": search.error }))
            .content(vec![ToolCallContent::from(text)]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::WebSearchResult;

    #[test]
    fn a_search_is_a_finished_fetch_call_listing_its_pages() {
        let search = WebSearch {
            id: "srvtoolu_1".into(),
            query: "tokyo".into(),
            status: WebSearchStatus::Completed,
            results: vec![WebSearchResult {
                title: "Tokyo".into(),
                url: "https://example.org/".into(),
            }],
            error: None,
            api: String::new(),
            provider_blocks: vec![],
        };
        let value = serde_json::to_value(update(&search)).unwrap();
        assert_eq!(value["sessionUpdate"], "tool_call");
        assert_eq!(value["toolCallId"], "srvtoolu_1");
        assert_eq!(value["title"], "Web search: tokyo");
        assert_eq!(value["kind"], "fetch");
        assert_eq!(value["status"], "completed");
        assert_eq!(value["rawInput"], json!({"query": "tokyo"}));
        assert_eq!(
            value["content"][0]["content"]["text"],
            "Searched the web: \"tokyo\" — 1 result\n\nTokyo — https://example.org/"
        );
    }
}
