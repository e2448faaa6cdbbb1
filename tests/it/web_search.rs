//! The provider's own web search (`[web] search`): what each wire API is asked (on and off),
//! the `web_search` event and `webSearch` block a streamed search becomes, the provider's
//! blocks sent back verbatim on the next request (also after the session is resumed), and
//! the notice for a provider without a search of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::model::ModelInfo;
use agent::llm::provider::Api;
use agent::llm::request::{ModelRequest, ThinkingLevel, WebSearchTool};
use agent::llm::{anthropic, openai_chat, openai_responses};
use agent::protocol::event::{AgentEvent, NoticeLevel};
use agent::protocol::message::{
    AssistantContent, AssistantMessage, Message, UserMessage, WebSearch, WebSearchResult,
    WebSearchStatus,
};
use agent::tools::Tools;
use serde_json::{Value, json};
use std::sync::Arc;
use support::env::env;
use support::harness::Harness;
use support::process::{command, run};
use support::server::{FakeServer, Reply};
use support::{anthropic as anthropic_sse, chat, corpus, responses};

const PROVIDER: &str = "test";
const MODEL: &str = "test-model";

fn anthropic_search() -> WebSearch {
    WebSearch {
        id: "srvtoolu_1".into(),
        query: "rust release".into(),
        status: WebSearchStatus::Completed,
        results: vec![WebSearchResult {
            title: "Rust".into(),
            url: "https://www.rust-lang.org/".into(),
        }],
        error: None,
        api: "anthropic".into(),
        provider_blocks: vec![
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                   "input": {"query": "rust release"}}),
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                   "content": [{"type": "web_search_result", "title": "Rust",
                                "url": "https://www.rust-lang.org/", "encrypted_content": "EqAB",
                                "page_age": null}]}),
        ],
    }
}

fn responses_search() -> WebSearch {
    WebSearch {
        id: "ws_1".into(),
        query: "rust release".into(),
        status: WebSearchStatus::Completed,
        results: vec![],
        error: None,
        api: "openai-responses".into(),
        provider_blocks: vec![json!({"type": "web_search_call", "id": "ws_1",
            "status": "completed", "action": {"type": "search", "query": "rust release"}})],
    }
}

/// user, an assistant answer of `provider` (with both kinds of search when `searches`), user.
fn history(provider: &str, searches: bool) -> Vec<Arc<Message>> {
    let mut answer = AssistantMessage::empty(provider, MODEL);
    if searches {
        answer
            .content
            .push(AssistantContent::WebSearch(anthropic_search()));
        answer
            .content
            .push(AssistantContent::WebSearch(responses_search()));
    }
    answer.content.push(AssistantContent::Text {
        text: "Rust 1.91 is out.".into(),
    });
    vec![
        Arc::new(Message::User(UserMessage::text("what is new in rust?"))),
        Arc::new(Message::Assistant(answer)),
        Arc::new(Message::User(UserMessage::text("and before that?"))),
    ]
}

fn body(api: Api, messages: &[Arc<Message>], search: Option<WebSearchTool>) -> Vec<u8> {
    let model = ModelInfo::unknown(MODEL);
    let tools = Tools::from_names(&["read"]).unwrap().specs();
    let request = ModelRequest {
        model: &model,
        system_prompt: "You are a test.",
        messages,
        tools: &tools,
        thinking: ThinkingLevel::Off,
        web_search: search,
        cache_key: None,
    };
    match api {
        Api::Anthropic => anthropic::build_body(&request, PROVIDER),
        Api::OpenaiResponses => openai_responses::build_body(&request, PROVIDER),
        Api::OpenaiChat => openai_chat::build_body(&request, openai_chat::OutputLimit::MaxTokens),
        Api::AgentProxy => unreachable!(),
    }
    .unwrap()
}

fn parsed(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

const ON: Option<WebSearchTool> = Some(WebSearchTool { max_uses: 3 });

#[test]
fn off_the_bodies_are_what_they_were_and_searches_are_left_out() {
    for api in [Api::Anthropic, Api::OpenaiResponses, Api::OpenaiChat] {
        let with = body(api, &history(PROVIDER, true), None);
        let without = body(api, &history(PROVIDER, false), None);
        assert_eq!(
            String::from_utf8_lossy(&with),
            String::from_utf8_lossy(&without),
            "{api:?}: a search in the history changes nothing while search is off"
        );
        let text = String::from_utf8(with).unwrap();
        assert!(!text.contains("web_search"), "{api:?}: {text}");
        assert!(!text.contains("EqAB"), "{api:?}: {text}");
    }
}

#[test]
fn anthropic_is_offered_its_server_tool_and_gets_its_own_blocks_back() {
    let sent = parsed(&body(Api::Anthropic, &history(PROVIDER, true), ON));
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "read");
    assert_eq!(
        tools.last().unwrap(),
        &json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3})
    );
    let search = anthropic_search();
    // The assistant turn: the two blocks as they came, then the text; the Responses item
    // is not Anthropic's and is left out.
    assert_eq!(
        sent["messages"][1]["content"],
        json!([search.provider_blocks[0], search.provider_blocks[1],
               {"type": "text", "text": "Rust 1.91 is out."}])
    );
    // Another provider's search is not sent back.
    let other = parsed(&body(Api::Anthropic, &history("elsewhere", true), ON));
    assert_eq!(
        other["messages"][1]["content"],
        json!([{"type": "text", "text": "Rust 1.91 is out."}])
    );
}

#[test]
fn responses_is_offered_its_tool_and_gets_its_own_items_back() {
    let sent = parsed(&body(Api::OpenaiResponses, &history(PROVIDER, true), ON));
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap(), &json!({"type": "web_search"}));
    assert_eq!(sent["include"], json!(["web_search_call.action.sources"]));
    let input = sent["input"].as_array().unwrap();
    assert_eq!(input[1], responses_search().provider_blocks[0]);
    assert_eq!(input[2]["type"], "message");
    assert_eq!(input[2]["role"], "assistant");
    assert_eq!(input.len(), 4, "{input:?}");
    let other = parsed(&body(Api::OpenaiResponses, &history("elsewhere", true), ON));
    assert!(
        !other["input"].to_string().contains("web_search_call"),
        "{other}"
    );
}

#[test]
fn chat_completions_has_no_search_and_its_body_does_not_change() {
    let on = body(Api::OpenaiChat, &history(PROVIDER, true), ON);
    let off = body(Api::OpenaiChat, &history(PROVIDER, false), None);
    assert_eq!(
        String::from_utf8(on).unwrap(),
        String::from_utf8(off).unwrap()
    );
}

/// A Responses stream with a search (its progress events too) and then the answer.
fn responses_stream() -> Vec<String> {
    let item_done = json!({"type": "web_search_call", "id": "ws_67", "status": "completed",
        "action": {"type": "search", "query": "tokyo population",
                   "sources": [{"type": "url", "url": "https://example.org/tokyo"},
                               {"type": "url", "url": "https://example.org/japan"}]}});
    let mut frames = vec![
        responses::event(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "web_search_call", "id": "ws_67", "status": "in_progress"}}),
        ),
        responses::event(json!({"type": "response.web_search_call.in_progress",
            "output_index": 0, "item_id": "ws_67"})),
        responses::event(json!({"type": "response.web_search_call.searching",
            "output_index": 0, "item_id": "ws_67"})),
        responses::event(json!({"type": "response.web_search_call.completed",
            "output_index": 0, "item_id": "ws_67"})),
        responses::event(
            json!({"type": "response.output_item.done", "output_index": 0, "item": item_done}),
        ),
    ];
    // The builder numbers its items from 0; the message is the second output item here.
    let answer: Vec<String> = responses::Stream::new()
        .text("About 14 million.")
        .finish()
        .into_iter()
        .map(|frame| frame.replace("\"output_index\":0", "\"output_index\":1"))
        .collect();
    frames.splice(0..0, answer[..2].iter().cloned());
    frames.extend(answer[2..].iter().cloned());
    frames
}

#[tokio::test]
async fn a_responses_search_is_an_event_a_block_and_goes_back_on_the_next_request() {
    let mut h = Harness::start_api(
        Api::OpenaiResponses,
        vec![
            Reply::sse(responses_stream()),
            Reply::sse(responses::text("Yes.")),
        ],
        |config| config.tool_settings.web.search = Some(4),
    )
    .await;
    h.prompt("how many people live in tokyo?");
    let events = h.until_end().await;
    let searches: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::WebSearch { .. }))
        .collect();
    assert_eq!(searches.len(), 1, "one event per search");
    assert_eq!(
        serde_json::to_value(searches[0]).unwrap(),
        json!({"type": "web_search", "id": "ws_67", "query": "tokyo population",
               "status": "completed",
               "results": [{"url": "https://example.org/tokyo"}, {"url": "https://example.org/japan"}]})
    );
    let answer = events
        .iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::MessageEnd { message } => message.as_assistant().cloned(),
            _ => None,
        })
        .unwrap();
    let AssistantContent::WebSearch(search) = &answer.content[0] else {
        panic!("{:?}", answer.content);
    };
    assert_eq!(search.api, "openai-responses");
    assert_eq!(search.provider_blocks.len(), 1);
    assert_eq!(
        search.provider_blocks[0]["action"]["query"],
        "tokyo population"
    );
    assert_eq!(answer.text(), "About 14 million.");

    h.prompt("sure?");
    h.until_end().await;
    let bodies = h.server.bodies();
    assert_eq!(
        bodies[0]["tools"].as_array().unwrap().last().unwrap(),
        &json!({"type": "web_search"})
    );
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(
        input[1], search.provider_blocks[0],
        "the item goes back as it came"
    );
    assert_eq!(input[2]["type"], "message");
    assert_eq!(input[2]["content"][0]["text"], "About 14 million.");
}

#[tokio::test]
async fn a_provider_without_a_search_of_its_own_is_named_once() {
    let mut h = Harness::start_api(
        Api::OpenaiChat,
        vec![Reply::sse(chat::text("one")), Reply::sse(chat::text("two"))],
        |config| config.tool_settings.web.search = Some(5),
    )
    .await;
    h.prompt("first");
    let first = h.until_end().await;
    h.prompt("second");
    let second = h.until_end().await;
    let notices = |events: &[AgentEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Notice {
                    level: NoticeLevel::Warning,
                    message,
                } => Some(message.clone()),
                _ => None,
            })
            .collect()
    };
    let told = notices(&first);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("has no web search of its own") && told[0].contains("openai-chat"),
        "{}",
        told[0]
    );
    assert!(notices(&second).is_empty(), "said once");
    let bodies = h.server.bodies();
    assert!(!bodies[0].to_string().contains("web_search"));
}

/// The recorded stream's frames' data, parsed.
fn recorded_blocks(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| event["type"] == "content_block_start")
        .map(|event| event["content_block"].clone())
        .collect()
}

fn anthropic_agent(
    env: &support::env::Env,
    server: &FakeServer,
    args: &[&str],
) -> tokio::process::Command {
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args([
        "--provider",
        "anthropic",
        "--base-url",
        &server.origin,
        "--model",
        MODEL,
    ])
    .args(args)
    .env("ANTHROPIC_API_KEY", "sk-ant-test");
    cmd
}

#[tokio::test]
async fn a_recorded_anthropic_search_is_shown_kept_and_sent_back_after_resuming() {
    let Some(dir) = corpus::dir() else {
        crate::support::skip::skip("no conformance corpus beside the repository");
        return;
    };
    let sse =
        std::fs::read_to_string(dir.join("streams/anthropic/web-search-server-tool.sse")).unwrap();
    let blocks = recorded_blocks(&sse);
    let result_block = blocks
        .iter()
        .find(|b| b["type"] == "web_search_tool_result")
        .unwrap()
        .clone();
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[web]\nsearch = true\nsearch_max_uses = 2\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::raw(&sse),
        Reply::sse(anthropic_sse::text("Still about 14 million.")),
    ])
    .await;

    let out = run(anthropic_agent(
        &env,
        &server,
        &["--mode", "json", "population of tokyo?"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let searches: Vec<&Value> = lines.iter().filter(|l| l["type"] == "web_search").collect();
    assert_eq!(searches.len(), 1, "{}", out.stdout);
    let event = searches[0];
    assert_eq!(event["id"], "srvtoolu_01KYmV1c6SjLeWGNcNG4p2yi");
    assert_eq!(event["query"], "Tokyo population 2026 current");
    assert_eq!(event["status"], "completed");
    let pages = result_block["content"].as_array().unwrap();
    assert_eq!(event["results"].as_array().unwrap().len(), pages.len());
    assert_eq!(
        event["results"][0],
        json!({"title": pages[0]["title"], "url": pages[0]["url"]})
    );
    assert!(
        event.get("providerBlocks").is_none(),
        "the event carries no blocks"
    );
    let first = &server.bodies()[0];
    assert_eq!(
        first["tools"].as_array().unwrap().last().unwrap(),
        &json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2})
    );

    // The session file keeps the blocks as they came, the call's input streamed in.
    let session = std::fs::read_to_string(env.only_session()).unwrap();
    let stored = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["message"]["role"] == "assistant")
        .unwrap();
    let block = &stored["message"]["content"][0];
    assert_eq!(block["type"], "webSearch");
    assert_eq!(block["api"], "anthropic");
    let mut call = blocks[0].clone();
    call["input"] = json!({"query": "Tokyo population 2026 current"});
    assert_eq!(block["providerBlocks"], json!([call, result_block]));
    assert!(
        stored["message"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Based on")
    );

    // Resumed: the next request sends both blocks back, encrypted content and all.
    let out = run(anthropic_agent(
        &env,
        &server,
        &["-c", "-p", "and in 2020?"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Still about 14 million.\n");
    let second = &server.bodies()[1];
    let turn = &second["messages"][1];
    assert_eq!(turn["role"], "assistant");
    assert_eq!(turn["content"][0], call);
    assert_eq!(turn["content"][1], result_block);
    assert_eq!(turn["content"][2]["type"], "text");
    assert!(
        turn["content"][1]["content"][0]["encrypted_content"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );
}

#[tokio::test]
async fn a_search_max_uses_of_zero_is_a_config_error() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[web]\nsearch = true\nsearch_max_uses = 0\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let out = run(env.agent(&server, &["-p", "hi"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("web.search_max_uses") && out.stderr.contains("must be at least 1"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_editor_sees_a_search_as_a_finished_fetch_call() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[web]\nsearch = true\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![Reply::sse(responses_stream())]).await;
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args([
        "--provider",
        "openai-responses",
        "--base-url",
        &server.v1(),
        "--model",
        MODEL,
        "--mode",
        "acp",
    ])
    .env("OPENAI_API_KEY", "sk-test");
    let mut acp = support::acp::Acp::spawn(cmd).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    acp.prompt(&id, "how many people live in tokyo?")
        .await
        .unwrap()
        .unwrap();
    let updates = acp.drain();
    let calls: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "{updates:#?}");
    let call = calls[0];
    assert_eq!(call["toolCallId"], "ws_67");
    assert_eq!(call["title"], "Web search: tokyo population");
    assert_eq!(call["kind"], "fetch");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["rawInput"], json!({"query": "tokyo population"}));
    assert!(
        call["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Searched the web: \"tokyo population\" — 2 results"),
        "{call}"
    );
    assert_eq!(
        support::acp::text_of(&updates, "agent_message_chunk"),
        "About 14 million."
    );
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn searching_only_reads_so_plan_and_read_only_modes_keep_it() {
    use agent::tools::permission::PermissionMode;
    for mode in [PermissionMode::Plan, PermissionMode::ReadOnly] {
        let mut h = Harness::start_api(
            Api::Anthropic,
            vec![Reply::sse(anthropic_sse::text("ok"))],
            |config| {
                config.tool_settings.web.search = Some(5);
                config.permission_mode = mode;
            },
        )
        .await;
        h.prompt("look something up");
        h.until_end().await;
        let body = &h.server.bodies()[0];
        assert_eq!(
            body["tools"].as_array().unwrap().last().unwrap(),
            &json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}),
            "{mode:?}"
        );
    }
}

/// An Anthropic response that searches (its query streamed in two pieces), says `text`,
/// and stops with `stop_reason`.
fn anthropic_search_stream(text: &str, stop_reason: &str) -> Vec<String> {
    use anthropic_sse::event;
    let start = |index: usize, block: Value| {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let delta = |index: usize, delta: Value| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let stop = |index: usize| {
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1",
            "type": "message", "role": "assistant", "model": MODEL, "content": [],
            "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        start(
            0,
            json!({"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"query\": \"ru"}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "st\"}"}),
        ),
        stop(0),
        start(
            1,
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9",
            "content": [{"type": "web_search_result", "title": "Rust", "url": "https://www.rust-lang.org/",
                         "encrypted_content": "Eq9", "page_age": null}]}),
        ),
        stop(1),
        start(2, json!({"type": "text", "text": ""})),
        delta(2, json!({"type": "text_delta", "text": text})),
        stop(2),
        event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 20}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn a_paused_turn_is_sent_back_for_the_model_to_go_on() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::sse(anthropic_search_stream("Searching more ", "pause_turn")),
            Reply::sse(anthropic_sse::text("Rust 1.91 is out.")),
        ],
        |config| config.tool_settings.web.search = Some(5),
    )
    .await;
    h.prompt("what is new in rust?");
    let events = h.until_end().await;
    assert_eq!(support::harness::end_of(&events).0, "completed");
    let searches = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::WebSearch { query, .. } if query == "rust"))
        .count();
    assert_eq!(searches, 1);
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 2, "the paused turn is continued");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{last}");
    assert_eq!(
        last["content"],
        json!([
            {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "rust"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9",
             "content": [{"type": "web_search_result", "title": "Rust", "url": "https://www.rust-lang.org/",
                          "encrypted_content": "Eq9", "page_age": null}]},
            {"type": "text", "text": "Searching more"}
        ])
    );
    let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else {
        panic!()
    };
    let answers: Vec<String> = messages
        .iter()
        .filter_map(|m| m.as_assistant().map(|a| a.text()))
        .collect();
    assert_eq!(answers, ["Searching more ", "Rust 1.91 is out."]);
}
