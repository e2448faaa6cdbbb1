//! A small MCP server built with rmcp's server side, for the MCP tests: tools that echo,
//! return an image, fail, report progress, wait to be cancelled, crash, print garbage, change
//! the tool list, and one annotated read-only. It runs in-process over streamable HTTP
//! (`serve_http`), or as a real child process over stdio: the `test_mcp_server` example
//! (tests/fixtures/mcp_server.rs, built by `cargo test`) with `MCP_FIXTURE` set
//! (`stdio_command`). What the server saw (a cancellation, its pid) is written as files into
//! `MCP_FIXTURE_MARKS`, so a test in another process can wait for it.
#![allow(dead_code)]

use futures_util::StreamExt;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use rmcp::{tool, tool_handler, tool_router};
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A 1×1 PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Clone)]
pub struct Fixture {
    secret_visible: Arc<AtomicBool>,
    marks: Option<PathBuf>,
}

impl Fixture {
    pub fn new(marks: Option<PathBuf>) -> Fixture {
        Fixture {
            secret_visible: Arc::default(),
            marks,
        }
    }

    fn mark(&self, name: &str, text: &str) {
        if let Some(dir) = &self.marks {
            let _ = std::fs::write(dir.join(name), text);
        }
    }

    fn router(&self) -> ToolRouter<Self> {
        let router = Self::tool_router();
        if self.secret_visible.load(Ordering::SeqCst) {
            router
        } else {
            router.with_disabled("secret")
        }
    }
}

#[tool_router]
impl Fixture {
    #[tool(description = "Echo text back")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        format!("echo: {}", args.text)
    }

    #[tool(description = "Return a tiny PNG")]
    async fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("a picture"),
            ContentBlock::image(PNG, "image/png"),
        ])
    }

    #[tool(description = "Always fails")]
    async fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("boom")])
    }

    #[tool(description = "Reports progress three times, then answers")]
    async fn progress(
        &self,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<String, ErrorData> {
        let token = meta
            .get_progress_token()
            .ok_or_else(|| ErrorData::invalid_params("no progress token", None))?;
        for step in 1..=3u32 {
            let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
                .with_total(3.0)
                .with_message(format!("step {step}"));
            let _ = peer.notify_progress(param).await;
        }
        Ok("progress done".into())
    }

    #[tool(description = "Waits until cancelled")]
    async fn slow(&self, ctx: RequestContext<RoleServer>) -> String {
        self.mark("slow-started", "1");
        tokio::select! {
            _ = ctx.ct.cancelled() => {
                self.mark("cancelled", "1");
                "cancelled".into()
            }
            _ = tokio::time::sleep(Duration::from_secs(120)) => "slept".into(),
        }
    }

    #[tool(description = "Makes the `secret` tool appear and says the list changed")]
    async fn reveal(&self, peer: Peer<RoleServer>) -> String {
        self.secret_visible.store(true, Ordering::SeqCst);
        let _ = peer.notify_tool_list_changed().await;
        "revealed".into()
    }

    #[tool(description = "Hidden until `reveal`")]
    async fn secret(&self) -> String {
        "the secret is 42".into()
    }

    #[tool(description = "Exits the server process")]
    async fn crash(&self) -> String {
        eprintln!("fixture: crashing on purpose");
        std::process::exit(3)
    }

    #[tool(description = "Prints a line that is not JSON-RPC to stdout, then answers")]
    async fn garbage(&self) -> String {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"this is not json\n{\"jsonrpc\": \"nonsense\"}\n");
        let _ = out.flush();
        "survived".into()
    }

    #[tool(description = "Only looks", annotations(read_only_hint = true))]
    async fn peek(&self) -> String {
        "looked".into()
    }

    #[tool(description = "Answers with 3000 lines")]
    async fn big(&self) -> String {
        (0..3000).map(|i| format!("row {i}\n")).collect()
    }

    /// Over the 16 MiB one MCP message may hold, by enough to show the whole answer is
    /// measured, and no more: the test server serialises it unoptimised.
    #[tool(description = "Answers with 20 MB of text")]
    async fn huge(&self) -> String {
        let mut text = String::with_capacity(20_000_000);
        text.push_str("BEGIN ");
        text.extend(std::iter::repeat_n('z', 20_000_000 - text.len()));
        text
    }

    #[tool(description = "Answers with structured content only")]
    async fn structured(&self) -> CallToolResult {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(serde_json::json!({"sum": 3}));
        result
    }

    #[tool(description = "Tells its process id")]
    async fn pid(&self) -> String {
        std::process::id().to_string()
    }
}

#[tool_handler(router = self.router())]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("fixture", "0.0.0"))
    }
}

/// The command that runs the fixture over stdio: the `test_mcp_server` example beside the
/// test binary (`fixtures::program`). `mode` is `stdio`, `garbage` (non-JSON lines on stdout
/// first), `stray` (a response to a request nobody sent before anything else) or `hang` (never
/// answers `initialize`).
pub fn stdio_command(mode: &str, marks: &Path) -> (String, Vec<String>, Vec<(String, String)>) {
    (
        super::fixtures::program("test_mcp_server")
            .display()
            .to_string(),
        Vec::new(),
        vec![
            ("MCP_FIXTURE".into(), mode.into()),
            ("MCP_FIXTURE_MARKS".into(), marks.display().to_string()),
        ],
    )
}

/// A `[mcp_servers.NAME]` table (config.toml text) running the stdio fixture in `mode`.
pub fn config_table(name: &str, mode: &str, marks: &Path) -> String {
    let (command, args, env) = stdio_command(mode, marks);
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k} = {}", serde_json::json!(v)))
        .collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = {}\nenv = {{ {} }}\n",
        serde_json::json!(command),
        serde_json::json!(args),
        env.join(", ")
    )
}

/// The body of the `test_mcp_server` program: serve over stdio when asked to, then exit.
pub fn serve_stdio_if_asked() {
    let Ok(mode) = std::env::var("MCP_FIXTURE") else {
        return;
    };
    let marks = std::env::var_os("MCP_FIXTURE_MARKS").map(PathBuf::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let fixture = Fixture::new(marks.clone());
        fixture.mark("pid", &std::process::id().to_string());
        match mode.as_str() {
            "hang" => {
                // Read and ignore everything: `initialize` is never answered.
                let mut sink = tokio::io::sink();
                let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
            }
            mode => {
                if mode == "garbage" {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(b"Starting the fixture server...\n{\"also\": 1}\n");
                    let _ = out.flush();
                }
                if mode == "stray" {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n");
                    let _ = out.flush();
                }
                eprintln!("fixture: serving on stdio");
                if let Ok(service) = fixture.serve(rmcp::transport::stdio()).await {
                    let _ = service.waiting().await;
                }
            }
        }
    });
    std::process::exit(0);
}

/// How `serve_http_with` answers.
#[derive(Clone, Copy, Default)]
pub struct HttpMode {
    /// Answer POSTs with plain JSON (stateless) instead of an event stream.
    pub json: bool,
    /// Put a response to a request nobody sent before everything else in the event stream
    /// that answers the first POST (`initialize`).
    pub stray: bool,
}

/// Serve the fixture over streamable HTTP on 127.0.0.1; requests must carry
/// `Authorization: Bearer <token>` when `token` is set. Returns the endpoint URL.
pub async fn serve_http(token: Option<&'static str>, marks: Option<PathBuf>) -> String {
    serve_http_with(token, marks, HttpMode::default()).await
}

/// `serve_http`, answering as `mode` says.
pub async fn serve_http_with(
    token: Option<&'static str>,
    marks: Option<PathBuf>,
    mode: HttpMode,
) -> String {
    let guard: Guard = Arc::new(move |given: Option<&str>| {
        let expected = token.map(|t| format!("Bearer {t}"));
        (expected.is_some() && given.map(str::to_string) != expected).then(String::new)
    });
    serve_http_guarded(guard, marks, mode).await
}

/// Decides from a request's `Authorization` header whether it is refused: `Some(challenge)`
/// answers 401 with that `WWW-Authenticate` header (none when it is empty).
pub type Guard = Arc<dyn Fn(Option<&str>) -> Option<String> + Send + Sync>;

/// `serve_http_with`, letting `guard` decide which requests are authorized.
pub async fn serve_http_guarded(guard: Guard, marks: Option<PathBuf>, mode: HttpMode) -> String {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(mode.json)
        .with_legacy_session_mode(!mode.json);
    let service = StreamableHttpService::new(
        move || Ok(Fixture::new(marks.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let stray_sent = Arc::new(AtomicBool::new(!mode.stray));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let inner = TowerToHyperService::new(service.clone());
            let stray_sent = stray_sent.clone();
            let guard = guard.clone();
            let guarded = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let inner = inner.clone();
                    let stray_sent = stray_sent.clone();
                    let guard = guard.clone();
                    async move {
                        let given = request
                            .headers()
                            .get(hyper::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string);
                        if let Some(challenge) = guard(given.as_deref()) {
                            let body = http_body_util::Full::new(bytes::Bytes::from_static(
                                b"unauthorized",
                            ))
                            .map_err(|never| match never {})
                            .boxed();
                            let mut refused = hyper::Response::builder().status(401);
                            if !challenge.is_empty() {
                                refused = refused.header("www-authenticate", challenge);
                            }
                            return Ok(refused.body(body).unwrap());
                        }
                        let is_post = request.method() == hyper::Method::POST;
                        let response = match hyper::service::Service::call(&inner, request).await {
                            Ok(response) => response,
                            Err(error) => return Err(error),
                        };
                        let is_sse = response
                            .headers()
                            .get(hyper::header::CONTENT_TYPE)
                            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                        if !(is_post && is_sse) || stray_sent.swap(true, Ordering::SeqCst) {
                            return Ok(response);
                        }
                        let stray = futures_util::stream::once(async {
                            Ok(hyper::body::Frame::data(bytes::Bytes::from_static(
                                b"data: {\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n\n",
                            )))
                        });
                        Ok(response.map(|body| {
                            let frames = stray.chain(http_body_util::BodyStream::new(body));
                            BodyExt::boxed(http_body_util::StreamBody::new(frames))
                        }))
                    }
                },
            );
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), guarded)
                    .await;
            });
        }
    });
    format!("http://{address}/mcp")
}
