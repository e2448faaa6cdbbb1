// The web client of `agent serve --web` (docs/protocol.md §4.6): the sessions, one session's
// transcript as its events stream in (GET /v1/sessions/ID/events, an `attach` as server-sent
// events: the replay first, then every event), the approval dialog, the prompt box (prompt,
// steer, follow-up, abort), the todo list and the sub-agent tree. Everything it shows comes
// from the events; everything it does is one RPC line (POST /v1/sessions/ID/commands).
// Hand-written, no build step; Render (markdown.js) turns text into HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
};

// ---- the server -------------------------------------------------------------------------

class SignInNeeded extends Error {}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) throw new SignInNeeded();
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.error && data.error.message) || `HTTP ${response.status}`);
  return data;
}

// The token from the URL fragment (#token=…): taken out of the address at once, traded for
// the sign-in cookie, never kept.
async function signInFromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token === null) return;
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + (rest ? `#${rest}` : ""));
  await signIn(token);
}

async function signIn(token) {
  const response = await fetch("/v1/web/login", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  if (!response.ok) throw new Error(response.status === 401 ? "That token is not accepted." : `HTTP ${response.status}`);
}

// ---- state ------------------------------------------------------------------------------

const app = {
  sessionId: null,
  events: null,
  running: false,
  approvals: [], // tool_approval_request events waiting, oldest first
  showing: null, // the approval in the dialog
  agents: new Map(), // agentId -> {agentId, parentToolCallId, name, description, status}
  callOwners: new Map(), // toolCallId -> agentId of the sub-agent that made it
  agentsTimer: null,
};

// The transcript's model: what is shown is a function of it, so a replay and the live
// events it replaces draw the same thing.
const view = {
  cards: new Map(), // toolCallId -> {call, result, partial, running, node}
  partial: null, // {node, blocks: [{type, text}]} while an assistant message streams
  frame: 0,
};

// ---- sessions ---------------------------------------------------------------------------

async function loadSessions() {
  let data;
  try {
    data = await api("GET", "/v1/sessions");
  } catch (e) {
    if (e instanceof SignInNeeded) return showSignIn();
    $("sessions").replaceChildren(el("li", "error", `Cannot list the sessions: ${e.message}`));
    return;
  }
  $("signin").hidden = true;
  const list = $("sessions");
  list.replaceChildren();
  const sessions = data.sessions || [];
  if (!sessions.length) list.append(el("li", "dim", "No sessions yet."));
  for (const s of sessions) {
    const item = el("li", `session${s.live ? " live" : ""}${s.id === app.sessionId ? " current" : ""}`);
    const button = el("button", null);
    button.type = "button";
    button.dataset.id = s.id;
    button.append(el("span", "badge", s.live ? "live" : "saved"), el("span", "sid", s.id));
    const about = [s.state, s.model].filter(Boolean).join(" · ");
    if (about) button.append(el("span", "dim about", about));
    button.addEventListener("click", () => pick(s));
    item.append(button);
    list.append(item);
  }
}

async function pick(session) {
  closeDrawer();
  try {
    let id = session.id;
    if (!session.live) id = (await api("POST", "/v1/sessions", { resume: session.id })).sessionId;
    open(id);
  } catch (e) {
    setStatus(`Cannot open ${session.id}: ${e.message}`, true);
  }
  loadSessions();
}

function showSignIn() {
  $("signin").hidden = false;
  $("composer").hidden = true;
  $("sessions").replaceChildren(el("li", "dim", "Sign in to see the sessions."));
  $("token").focus();
}

// ---- one session ------------------------------------------------------------------------

function open(id) {
  if (app.events) app.events.close();
  app.sessionId = id;
  const params = new URLSearchParams(location.hash.slice(1));
  params.set("session", id);
  history.replaceState(null, "", `${location.pathname}#${params}`);
  $("title").textContent = id;
  for (const item of document.querySelectorAll("#sessions .session")) {
    item.classList.toggle("current", item.firstChild.dataset.id === id);
  }
  $("empty").hidden = true;
  $("composer").hidden = false;
  resetView();
  const events = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events`);
  app.events = events;
  events.onmessage = (message) => {
    let line;
    try {
      line = JSON.parse(message.data);
    } catch {
      return;
    }
    if (events === app.events) onLine(line);
  };
  events.onerror = () => {
    if (events !== app.events) return;
    if (events.readyState === EventSource.CLOSED) {
      setStatus("The session is not live any more.", true);
      setRunning(false);
      loadSessions();
    } else {
      setStatus("Reconnecting…");
    }
  };
}

function resetView() {
  for (const card of view.cards.values()) card.node.remove();
  view.cards.clear();
  view.partial = null;
  $("transcript").replaceChildren();
  app.approvals = [];
  hideApproval();
  app.agents.clear();
  app.callOwners.clear();
  renderTodos([]);
  renderQueue({ steering: [], followUp: [] });
  renderAgents();
  setStatus("");
}

async function command(line) {
  if (!app.sessionId) return null;
  try {
    const answer = await api("POST", `/v1/sessions/${encodeURIComponent(app.sessionId)}/commands`, line);
    if (!answer.success) setStatus(answer.error || `${line.type} failed`, true);
    return answer;
  } catch (e) {
    if (e instanceof SignInNeeded) showSignIn();
    else setStatus(`${line.type}: ${e.message}`, true);
    return null;
  }
}

function onLine(line) {
  switch (line.type) {
    case "response":
      if (line.command === "attach" && line.success) onAttach(line.data);
      return;
    case "live_end":
      setStatus(`The session ended: ${line.reason}`, true);
      setRunning(false);
      app.events.close();
      loadSessions();
      return;
    case "approval_resolved":
      resolveApproval(line.toolCallId, line.agentId);
      return;
    default:
      onEvent(line, null);
  }
}

// The `attach` answer: the conversation so far (the turn in progress follows as events).
function onAttach(data) {
  resetView();
  setStatus("");
  for (const message of data.messages || []) addMessage(message);
  setRunning(Boolean(data.isStreaming));
  refreshState();
  refreshAgents();
  scrollToEnd(true);
}

async function refreshState() {
  const answer = await command({ type: "get_state" });
  if (answer && answer.success && answer.data) {
    setState(answer.data.state);
    $("title").textContent = answer.data.sessionName || app.sessionId;
    $("title").title = [answer.data.model, answer.data.sessionFile].filter(Boolean).join(" · ");
  }
}

// An engine event (§3.1); `agentId` set for one of a sub-agent's.
function onEvent(event, agentId) {
  if (agentId !== null) return onChildEvent(event, agentId);
  switch (event.type) {
    case "agent_start":
      setRunning(true);
      setStatus("");
      break;
    case "agent_end":
      setRunning(false);
      if (event.status !== "completed") setStatus(`The run ${event.status === "limit" ? "hit a limit" : event.status}${event.error ? `: ${event.error}` : ""}`, event.status !== "aborted");
      app.approvals = [];
      hideApproval();
      loadSessions();
      break;
    case "state":
      setState(event.state);
      break;
    case "message_start":
      if (event.message.role === "assistant") startPartial(event.message);
      break;
    case "message_update":
      updatePartial(event.assistantMessageEvent);
      break;
    case "message_end":
      endPartial();
      addMessage(event.message);
      break;
    case "tool_execution_start":
      toolStarted(event);
      break;
    case "tool_execution_update":
      toolUpdated(event);
      break;
    case "tool_execution_end":
      toolEnded(event.toolCallId, event.result, event.isError);
      break;
    case "tool_approval_request":
      askApproval(event);
      break;
    case "todo_update":
      renderTodos(event.todos || []);
      break;
    case "queue_update":
      renderQueue(event);
      break;
    case "notice":
      addNote(event.message, event.level);
      break;
    case "auto_retry_start":
      setStatus(`Retrying (${event.attempt}/${event.maxAttempts}): ${event.errorMessage}`);
      break;
    case "auto_compaction_start":
      setStatus("Compacting the conversation…");
      break;
    case "auto_compaction_end":
      setStatus("");
      break;
    case "session_changed":
      // Another session, a branch or a rewind: the conversation is read again.
      open(event.session.id);
      break;
    case "subagent_event":
      onEvent(event.event, event.agentId);
      break;
    default:
      break;
  }
}

// A sub-agent's event: only what its tree needs.
function onChildEvent(event, agentId) {
  if (event.type === "subagent_event") {
    const child = app.agents.get(event.agentId);
    if (!child || child.parent === undefined) noteAgent(event.agentId, { parent: agentId });
    return onChildEvent(event.event, event.agentId);
  }
  if (!app.agents.has(agentId)) noteAgent(agentId, {});
  if (event.type === "tool_execution_start") app.callOwners.set(event.toolCallId, agentId);
  if (event.type === "agent_start" || event.type === "agent_end") refreshAgents();
}

function noteAgent(agentId, fields) {
  const known = app.agents.get(agentId) || { agentId, status: "running" };
  app.agents.set(agentId, Object.assign(known, fields));
  renderAgents();
  refreshAgents();
}

// ---- the transcript ---------------------------------------------------------------------

function addMessage(message) {
  if (message.role === "user") addUser(message);
  else if (message.role === "assistant") addAssistant(message);
  else if (message.role === "toolResult") toolEnded(message.toolCallId, message, message.isError);
  else if (message.role === "compaction" || message.summary) addNote("The conversation before this point was compacted.", "info");
}

function textOf(content) {
  if (typeof content === "string") return content;
  return (content || [])
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

function addUser(message) {
  const node = el("div", "msg user");
  const first = (message.content || []).find((b) => b.type === "text");
  node.append(el("div", "text", first ? first.text : textOf(message.content)));
  const images = (message.content || []).filter((b) => b.type === "image").length;
  if (images) node.append(el("div", "dim", `${images} image${images > 1 ? "s" : ""}`));
  append(node);
}

function addNote(text, level) {
  append(el("div", `note ${level || "info"}`, text));
}

function append(node) {
  const stick = nearEnd();
  $("transcript").append(node);
  if (stick) scrollToEnd();
}

function nearEnd() {
  const box = $("transcript");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

function scrollToEnd() {
  const box = $("transcript");
  box.scrollTop = box.scrollHeight;
}

function assistantNode(message, blocks) {
  const node = el("div", "msg assistant");
  for (const block of blocks) {
    if (block.type === "text" && block.text) {
      const text = el("div", "md");
      text.innerHTML = Render.markdown(block.text);
      node.append(text);
    } else if (block.type === "thinking" && (block.thinking || block.text)) {
      const details = el("details", "thinking");
      details.append(el("summary", null, "Thinking"), el("div", "text", block.thinking || block.text));
      node.append(details);
    } else if (block.type === "toolCall") {
      node.append(cardFor(block).node);
    } else if (block.type === "webSearch") {
      const results = (block.results || []).length;
      node.append(el("div", "note info", `Searched the web: "${block.query}" — ${results} result${results === 1 ? "" : "s"}`));
    }
  }
  if (message && message.refusal) node.append(el("div", "note warning", `Refused: ${message.refusal}`));
  if (message && message.stopReason === "aborted") node.append(el("div", "stop stop-aborted", "aborted"));
  if (message && message.stopReason === "error") node.append(el("div", "stop stop-error", message.errorMessage || "error"));
  if (message && message.stopReason === "length") node.append(el("div", "stop", "cut at the output limit"));
  return node;
}

function addAssistant(message) {
  const node = assistantNode(message, message.content || []);
  if (node.childElementCount) append(node);
}

// The assistant message being streamed: its blocks as the deltas build them.
function startPartial(message) {
  endPartial();
  const node = el("div", "msg assistant streaming");
  view.partial = { node, blocks: [], message };
  append(node);
}

function updatePartial(delta) {
  const partial = view.partial;
  if (!partial || !delta) return;
  const index = delta.contentIndex || 0;
  const kind = delta.type.split("_")[0];
  if (!partial.blocks[index]) partial.blocks[index] = { type: kind === "toolcall" ? "pending" : kind, text: "" };
  if (delta.type.endsWith("_delta")) partial.blocks[index].text += delta.delta || "";
  drawPartialSoon();
}

function drawPartialSoon() {
  if (view.frame) return;
  view.frame = requestAnimationFrame(() => {
    view.frame = 0;
    drawPartial();
  });
}

function drawPartial() {
  const partial = view.partial;
  if (!partial) return;
  const stick = nearEnd();
  const blocks = partial.blocks.filter(Boolean).map((b) => (b.type === "thinking" ? { type: "thinking", thinking: b.text } : b));
  const fresh = assistantNode(null, blocks.filter((b) => b.type !== "pending"));
  if (blocks.some((b) => b.type === "pending")) fresh.append(el("div", "dim", "preparing a tool call…"));
  partial.node.replaceChildren(...fresh.childNodes);
  if (stick) scrollToEnd();
}

function endPartial() {
  if (!view.partial) return;
  if (view.frame) cancelAnimationFrame(view.frame);
  view.frame = 0;
  view.partial.node.remove();
  view.partial = null;
}

// ---- tool calls -------------------------------------------------------------------------

function cardFor(call) {
  let card = view.cards.get(call.id);
  if (!card) {
    card = { call, result: null, partial: null, running: false, node: el("details", "tool") };
    view.cards.set(call.id, card);
  } else {
    card.call = call;
  }
  drawCard(card);
  return card;
}

function summaryOf(call) {
  const args = call.arguments || {};
  if (Array.isArray(args.todos)) return `${args.todos.length} item${args.todos.length === 1 ? "" : "s"}`;
  const shown = args.command || args.path || args.file_path || args.pattern || args.url || args.query || args.description;
  if (typeof shown === "string") return shown.split("\n")[0];
  const text = JSON.stringify(args);
  return text === "{}" ? "" : text;
}

function drawCard(card) {
  const { call, result } = card;
  const node = card.node;
  const open = node.open;
  node.className = `tool${card.running ? " running" : ""}${result && result.isError ? " failed" : ""}${result ? " done" : ""}`;
  node.dataset.toolCallId = call.id;
  const summary = el("summary");
  summary.append(el("span", "tool-name", call.name), el("span", "tool-arg", summaryOf(call)));
  const mark = card.running ? "running" : result ? (result.isError ? "error" : "done") : "";
  if (mark) summary.append(el("span", `tool-mark ${mark}`, mark));
  const body = el("div", "tool-body");
  const args = call.arguments || {};
  if (typeof args.command === "string") body.append(pre("command", args.command));
  else if (Object.keys(args).length && !["edit", "write", "todo_write"].includes(call.name)) body.append(pre("args", JSON.stringify(args, null, 2)));
  const details = (result && result.details) || {};
  if (typeof details.diff === "string") body.append(diffBlock(details.diff));
  else if (call.name === "write" && typeof args.content === "string" && !result?.isError) {
    body.append(el("div", "dim", args.path || ""), pre("content", args.content));
  } else if (call.name === "edit" && !result) body.append(pre("args", JSON.stringify(args, null, 2)));
  const output = result ? textOf(result.content) : card.partial ? textOf(card.partial.content) : "";
  if (output) body.append(pre(`output${result && result.isError ? " error" : ""}`, output));
  node.replaceChildren(summary, body);
  node.open = open;
}

function pre(cls, text) {
  const node = el("pre", cls);
  node.textContent = text;
  return node;
}

function diffBlock(diff) {
  const node = el("pre", "diff");
  node.innerHTML = Render.diffLines(diff);
  return node;
}

function toolStarted(event) {
  const card = view.cards.get(event.toolCallId) || cardFor({ id: event.toolCallId, name: event.toolName, arguments: event.args });
  if (!card.node.isConnected) {
    const holder = el("div", "msg assistant");
    holder.append(card.node);
    append(holder);
  }
  card.running = !card.result;
  drawCard(card);
}

function toolUpdated(event) {
  const card = view.cards.get(event.toolCallId);
  if (!card || card.result) return;
  card.partial = event.partialResult;
  drawCard(card);
}

function toolEnded(toolCallId, result, isError) {
  const card = view.cards.get(toolCallId);
  if (!card) return;
  card.result = { content: result.content, details: result.details, isError: Boolean(isError) };
  card.running = false;
  card.partial = null;
  drawCard(card);
}

// ---- approvals --------------------------------------------------------------------------

function askApproval(request) {
  app.approvals = app.approvals.filter((a) => !(a.toolCallId === request.toolCallId && (a.agentId || null) === (request.agentId || null)));
  app.approvals.push(request);
  if (!app.showing) showApproval(app.approvals[0]);
}

function resolveApproval(toolCallId, agentId) {
  app.approvals = app.approvals.filter((a) => !(a.toolCallId === toolCallId && (agentId == null || (a.agentId || null) === agentId)));
  if (app.showing && app.showing.toolCallId === toolCallId) {
    hideApproval();
    if (app.approvals.length) showApproval(app.approvals[0]);
  }
}

function showApproval(request) {
  app.showing = request;
  const preview = request.preview || { kind: "none" };
  $("approval-title").textContent = `Allow ${request.toolName}?`;
  $("approval-reason").textContent = request.reason || "";
  const body = $("approval-body");
  body.replaceChildren();
  if (preview.kind === "command") body.append(pre("command", preview.command));
  else if (preview.kind === "diff") {
    body.append(el("div", "dim", `${preview.path}${preview.newFile ? " (a new file)" : ""}`), diffBlock(preview.diff));
  } else if (preview.kind === "unavailable") body.append(el("div", "dim", preview.path || ""), el("p", "warning", preview.why));
  else body.append(pre("args", JSON.stringify(request.args || {}, null, 2)));
  $("approval-more").textContent = request.cwd ? `in ${request.cwd}` : "";
  document.querySelector('[data-decision="allow_unsandboxed"]').hidden = !(preview.kind === "command" && preview.unsandboxedAllowed);
  $("deny-form").hidden = true;
  $("approval-choices").hidden = false;
  $("approval").hidden = false;
  document.querySelector('[data-decision="allow"]').focus();
}

function hideApproval() {
  app.showing = null;
  $("approval").hidden = true;
}

async function answer(decision, message) {
  const request = app.showing;
  if (!request) return;
  const line = { type: "approve", toolCallId: request.toolCallId, decision };
  if (request.agentId) line.agentId = request.agentId;
  if (message) line.message = message;
  hideApproval();
  app.approvals = app.approvals.filter((a) => a !== request);
  await command(line);
  if (!app.showing && app.approvals.length) showApproval(app.approvals[0]);
}

function choose(decision) {
  if (decision === "deny_message") {
    $("approval-choices").hidden = true;
    $("deny-form").hidden = false;
    $("deny-message").focus();
  } else answer(decision);
}

// ---- the side panels --------------------------------------------------------------------

function renderTodos(todos) {
  const list = $("todos");
  list.replaceChildren();
  for (const todo of todos) {
    const item = el("li", `todo ${todo.status}`);
    item.append(el("span", "todo-mark", todo.status === "completed" ? "✓" : todo.status === "in_progress" ? "▸" : "○"), el("span", null, todo.content));
    list.append(item);
  }
  $("todo-box").hidden = !todos.length;
  const done = todos.filter((t) => t.status === "completed").length;
  $("todo-count").hidden = !todos.length;
  $("todo-count").textContent = `todo ${done}/${todos.length}`;
}

function renderQueue(queue) {
  const list = $("queue");
  list.replaceChildren();
  for (const text of queue.steering || []) list.append(el("li", null, `steer: ${text}`));
  for (const text of queue.followUp || []) list.append(el("li", null, `follow-up: ${text}`));
  list.hidden = !list.childElementCount;
}

function refreshAgents() {
  clearTimeout(app.agentsTimer);
  app.agentsTimer = setTimeout(async () => {
    const answer = await command({ type: "get_agents" });
    if (!answer || !answer.success || !answer.data) return;
    for (const agent of answer.data.agents || []) {
      const known = app.agents.get(agent.agentId) || {};
      app.agents.set(agent.agentId, Object.assign(known, agent));
    }
    renderAgents();
  }, 200);
}

// The sub-agents as a tree: a child hangs under the agent whose `task` call started it.
function renderAgents() {
  const list = $("agents");
  list.replaceChildren();
  const parentOf = (agent) => {
    if (agent.parent !== undefined) return agent.parent;
    return app.callOwners.get(agent.parentToolCallId) || null;
  };
  const draw = (parent, into, depth) => {
    for (const agent of app.agents.values()) {
      if (parentOf(agent) !== parent || depth > 8) continue;
      const item = el("li", `agent ${agent.status || "running"}`);
      const line = el("div", "agent-line");
      line.append(el("span", "agent-name", agent.name || agent.agentId), el("span", "dim", ` ${agent.status || "running"}`));
      if (agent.status === "running") {
        const stop = el("button", "small", "stop");
        stop.type = "button";
        stop.addEventListener("click", () => command({ type: "abort_agent", agentId: agent.agentId }));
        line.append(stop);
      }
      item.append(line);
      if (agent.description) item.append(el("div", "dim agent-about", agent.description));
      const children = el("ul");
      draw(agent.agentId, children, depth + 1);
      if (children.childElementCount) item.append(children);
      into.append(item);
    }
  };
  draw(null, list, 0);
  $("agents-box").hidden = !list.childElementCount;
}

// ---- the prompt box ---------------------------------------------------------------------

function setRunning(running) {
  app.running = running;
  $("send").textContent = running ? "Steer" : "Send";
  $("follow-up").hidden = !running;
  $("abort").hidden = !running;
  $("prompt").placeholder = running ? "Steer the run (enter), or queue a follow-up (alt+enter)" : "Ask anything";
  document.body.classList.toggle("running", running);
}

function setState(state) {
  $("state").dataset.state = state || "none";
  $("state").textContent = state ? state.replace("_", " ") : "";
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "dim";
}

async function send(kind) {
  const box = $("prompt");
  const message = box.value;
  if (!message.trim() || !app.sessionId) return;
  box.value = "";
  let line;
  if (kind === "follow_up") line = { type: "follow_up", message };
  else if (app.running) line = { type: "steer", message };
  else line = { type: "prompt", message };
  const answer = await command(line);
  if (!answer || !answer.success) box.value = message;
}

async function newSession() {
  closeDrawer();
  try {
    const created = await api("POST", "/v1/sessions", {});
    open(created.sessionId);
    loadSessions();
    $("prompt").focus();
  } catch (e) {
    if (e instanceof SignInNeeded) showSignIn();
    else setStatus(`Cannot start a session: ${e.message}`, true);
  }
}

function closeDrawer() {
  document.body.classList.remove("drawer");
  $("menu").setAttribute("aria-expanded", "false");
}

// ---- start ------------------------------------------------------------------------------

function wire() {
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send("prompt");
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send(e.altKey ? "follow_up" : "prompt");
    } else if (e.key === "Escape" && app.running) {
      command({ type: "abort" });
    }
  });
  $("follow-up").addEventListener("click", () => send("follow_up"));
  $("abort").addEventListener("click", () => command({ type: "abort" }));
  $("new-session").addEventListener("click", newSession);
  $("menu").addEventListener("click", () => {
    const open = document.body.classList.toggle("drawer");
    $("menu").setAttribute("aria-expanded", String(open));
    if (open) loadSessions();
  });
  // On a phone the side panel is a drawer: a tap beside it or esc closes it.
  $("main").addEventListener("click", () => {
    if (document.body.classList.contains("drawer")) closeDrawer();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && document.body.classList.contains("drawer")) closeDrawer();
  });
  $("todo-count").addEventListener("click", () => {
    document.body.classList.add("drawer");
    $("menu").setAttribute("aria-expanded", "true");
  });
  for (const button of document.querySelectorAll("[data-decision]")) {
    button.addEventListener("click", () => choose(button.dataset.decision));
  }
  $("deny-form").addEventListener("submit", (e) => {
    e.preventDefault();
    answer("deny", $("deny-message").value.trim() || undefined);
    $("deny-message").value = "";
  });
  document.addEventListener("keydown", (e) => {
    if (!app.showing || e.target.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = { y: "allow", a: "allow_session", n: "deny", m: "deny_message" };
    if (e.key === "u" && !document.querySelector('[data-decision="allow_unsandboxed"]').hidden) keys.u = "allow_unsandboxed";
    if (keys[e.key]) {
      e.preventDefault();
      choose(keys[e.key]);
    }
  });
  $("signin").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await signIn($("token").value.trim());
      $("token").value = "";
      $("signin-error").textContent = "";
      start();
    } catch (err) {
      $("signin-error").textContent = err.message;
    }
  });
}

async function start() {
  try {
    await signInFromFragment();
  } catch (e) {
    showSignIn();
    $("signin-error").textContent = e.message;
    return;
  }
  await loadSessions();
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted && $("signin").hidden) open(wanted);
}

wire();
// A token given in the address of the open page (pasted into the same tab).
window.addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.slice(1)).has("token")) start();
});
start();
