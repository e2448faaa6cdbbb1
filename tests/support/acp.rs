//! `agent --mode acp` driven as an editor drives it: the protocol crate's own client side,
//! over the child's stdin and stdout. Session updates and permission requests arrive in
//! order on one channel; permission requests are answered by the test. Every line the
//! agent writes is checked to be a JSON-RPC message (stdout carries nothing else).

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, JsonRpcRequest, Lines};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(120);

pub enum Incoming {
    /// A `session/update`: the notification as JSON (`params`).
    Update(Value),
    /// A `session/request_permission` (boxed: the request is large) and its responder.
    Permission(
        Box<RequestPermissionRequest>,
        Responder<RequestPermissionResponse>,
    ),
}

pub struct Acp {
    pub cx: ConnectionTo<Agent>,
    pub child: Child,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    stop: Option<oneshot::Sender<()>>,
    connection: Option<JoinHandle<Result<(), Error>>>,
    /// Lines the agent wrote that are not JSON-RPC messages.
    stray: Arc<Mutex<Vec<String>>>,
    /// The `update` of every `session/update` line the agent wrote, as written.
    wire: Arc<Mutex<Vec<Value>>>,
}

impl Acp {
    pub async fn spawn(mut cmd: Command) -> Acp {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn agent");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stray = Arc::new(Mutex::new(Vec::new()));
        let outgoing = futures_util::sink::unfold(stdin, async |mut stdin, line: String| {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        });
        let wire = Arc::new(Mutex::new(Vec::new()));
        let seen = (stray.clone(), wire.clone());
        let incoming = futures_util::stream::unfold(
            (BufReader::new(stdout).lines(), seen),
            async |(mut lines, seen)| match lines.next_line().await {
                Ok(Some(line)) => {
                    let value: Option<Value> = serde_json::from_str(&line).ok();
                    match value {
                        Some(v) if v["jsonrpc"] == "2.0" => {
                            if v["method"] == "session/update" {
                                seen.1.lock().unwrap().push(v["params"]["update"].clone());
                            }
                        }
                        _ => seen.0.lock().unwrap().push(line.clone()),
                    }
                    Some((Ok(line), (lines, seen)))
                }
                Ok(None) => None,
                Err(e) => Some((Err(e), (lines, seen))),
            },
        );
        let (tx, incoming_rx) = mpsc::unbounded_channel();
        let (updates, permissions) = (tx.clone(), tx);
        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let connection = tokio::spawn(
            Client
                .v1()
                .name("test-editor")
                .on_receive_notification(
                    async move |notification: SessionNotification, _cx| {
                        let value = serde_json::to_value(&notification).unwrap();
                        let _ = updates.send(Incoming::Update(value));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |request: RequestPermissionRequest, responder, _cx| {
                        let _ =
                            permissions.send(Incoming::Permission(Box::new(request), responder));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(Lines::new(outgoing, incoming), async move |cx| {
                    let _ = cx_tx.send(cx);
                    let _ = stopped.await;
                    Ok(())
                }),
        );
        let cx = cx_rx.await.expect("the client connection starts");
        Acp {
            cx,
            child,
            incoming: incoming_rx,
            stop: Some(stop),
            connection: Some(connection),
            stray,
            wire,
        }
    }

    /// Send a request and wait (at most 120 s) for its answer.
    pub async fn request<R: JsonRpcRequest>(&self, request: R) -> Result<R::Response, Error> {
        tokio::time::timeout(WAIT, self.cx.send_request(request).block_task())
            .await
            .expect("no answer within 120 s")
    }

    /// Send a request whose answer comes later (a prompt).
    pub fn start<R: JsonRpcRequest>(&self, request: R) -> JoinHandle<Result<R::Response, Error>>
    where
        R::Response: Send + 'static,
    {
        let sent = self.cx.send_request(request);
        tokio::spawn(async move {
            tokio::time::timeout(WAIT, sent.block_task())
                .await
                .expect("no answer within 120 s")
        })
    }

    pub async fn initialize(&self) -> InitializeResponse {
        self.request(InitializeRequest::new(ProtocolVersion::V1))
            .await
            .expect("initialize")
    }

    /// Initialize, then open a session in `cwd`.
    pub async fn open(&self, cwd: &Path) -> NewSessionResponse {
        self.initialize().await;
        self.request(NewSessionRequest::new(cwd))
            .await
            .expect("session/new")
    }

    pub fn prompt(
        &self,
        session: &SessionId,
        text: &str,
    ) -> JoinHandle<Result<PromptResponse, Error>> {
        self.prompt_blocks(session, vec![ContentBlock::from(text)])
    }

    pub fn prompt_blocks(
        &self,
        session: &SessionId,
        blocks: Vec<ContentBlock>,
    ) -> JoinHandle<Result<PromptResponse, Error>> {
        self.start(PromptRequest::new(session.clone(), blocks))
    }

    /// The next update or permission request (at most 120 s).
    pub async fn next(&mut self) -> Incoming {
        self.next_or_none()
            .await
            .expect("nothing arrived within 120 s")
    }

    /// The next update or permission request, or `None` after 120 s of nothing.
    async fn next_or_none(&mut self) -> Option<Incoming> {
        let next = tokio::time::timeout(WAIT, self.incoming.recv())
            .await
            .ok()?;
        Some(next.expect("the connection ended"))
    }

    /// The `update` objects of the session updates read so far, exactly as the agent wrote
    /// them: the protocol crate's client side (whose values the other methods give) drops
    /// fields that hold the schema's default, such as a tool call's `status: pending`.
    pub fn wire_updates(&self) -> Vec<Value> {
        self.wire.lock().unwrap().clone()
    }

    /// Updates (their `update` objects) up to and including the first matching `done`; a
    /// permission request on the way fails the test, and so do 120 s without a match (the
    /// failure shows what came).
    pub async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let Some(next) = self.next_or_none().await else {
                panic!("nothing matched within 120 s; seen {seen:#?}");
            };
            match next {
                Incoming::Update(params) => {
                    let update = params["update"].clone();
                    let stop = done(&update);
                    seen.push(update);
                    if stop {
                        return seen;
                    }
                }
                Incoming::Permission(request, _) => {
                    panic!("unexpected permission request: {request:?}; seen {seen:#?}")
                }
            }
        }
    }

    /// Updates up to the next permission request, and the request.
    pub async fn permission(
        &mut self,
    ) -> (
        Vec<Value>,
        RequestPermissionRequest,
        Responder<RequestPermissionResponse>,
    ) {
        let mut seen = Vec::new();
        loop {
            match self.next().await {
                Incoming::Update(params) => seen.push(params["update"].clone()),
                Incoming::Permission(request, responder) => return (seen, *request, responder),
            }
        }
    }

    /// Everything that arrived and was not read yet (updates only; requests fail the test).
    pub fn drain(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Ok(incoming) = self.incoming.try_recv() {
            match incoming {
                Incoming::Update(params) => seen.push(params["update"].clone()),
                Incoming::Permission(request, _) => {
                    panic!("unexpected permission request: {request:?}")
                }
            }
        }
        seen
    }

    /// Lines on stdout that were not JSON-RPC.
    pub fn stray_lines(&self) -> Vec<String> {
        self.stray.lock().unwrap().clone()
    }

    /// Wait for the agent to exit on its own, its input still open (a signal stopped it).
    pub async fn exit_code_unprompted(mut self) -> i32 {
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the agent did not exit")
            .unwrap();
        self.exit_code().await;
        status.code().unwrap_or(-1)
    }

    /// Close the connection (the agent's input ends) and wait for the agent to exit.
    pub async fn exit_code(mut self) -> i32 {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(connection) = self.connection.take() {
            let _ = tokio::time::timeout(WAIT, connection).await;
        }
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the agent did not exit")
            .unwrap();
        assert_eq!(
            self.stray_lines(),
            Vec::<String>::new(),
            "stdout carries only protocol"
        );
        status.code().unwrap_or(-1)
    }
}

/// Answer a permission request with one of its options.
pub fn choose(responder: Responder<RequestPermissionResponse>, option: &str) {
    responder
        .respond(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.to_string())),
        ))
        .unwrap();
}

/// The `sessionUpdate` kinds of `updates`, in order.
pub fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The text of every `kind` chunk, joined.
pub fn text_of(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// `_agent/steer`, as an editor that knows the extension sends it.
#[derive(
    Debug, Clone, serde::Serialize, serde::Deserialize, agent_client_protocol::JsonRpcRequest,
)]
#[request(method = "_agent/steer", response = SteerAnswer)]
#[serde(rename_all = "camelCase")]
pub struct Steer {
    pub session_id: SessionId,
    pub message: String,
}

#[derive(
    Debug, Clone, serde::Serialize, serde::Deserialize, agent_client_protocol::JsonRpcResponse,
)]
pub struct SteerAnswer {}

pub fn steer(session: &SessionId, message: &str) -> Steer {
    Steer {
        session_id: session.clone(),
        message: message.to_string(),
    }
}
