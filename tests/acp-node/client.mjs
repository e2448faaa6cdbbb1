// A real ACP client nobody here wrote — the TypeScript SDK's ClientSideConnection — driving
// `agent --mode acp` as an editor would. tests/acp_node.rs runs it against a loopback model
// server that answers, in order: a bash call, a text answer, a bash call that waits, and
// (after the session is loaded in a second process) a last answer.
//
//   node client.mjs AGENT [ARGS...]     (run in the session's working directory)
//
// It checks everything itself (node:assert) and exits 0, printing one JSON line that
// summarizes what it saw; on a failed check it exits 1 with the reason on stderr.

import * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";

const [agentPath, ...agentArgs] = process.argv.slice(2);
assert.ok(agentPath, "usage: node client.mjs AGENT [ARGS...]");
const cwd = process.cwd();
const WAIT_MS = 20_000;

/** One `agent --mode acp` process and a ClientSideConnection to it. */
function connect() {
  const child = spawn(agentPath, agentArgs, { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const updates = [];
  const waiters = [];
  const permissions = [];
  const client = {
    async sessionUpdate(params) {
      updates.push(params.update);
      for (const waiter of [...waiters]) {
        if (waiter.matches(params.update)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(params.update);
        }
      }
    },
    async requestPermission(params) {
      permissions.push(params);
      const allow = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    },
  };
  const connection = new acp.ClientSideConnection((_agent) => client, stream);
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  /** The first update (from now on) that `matches`. */
  const next = (what, matches) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS} ms`)), WAIT_MS);
      waiters.push({ matches, resolve: (u) => (clearTimeout(timer), resolve(u)) });
    });
  const close = async () => {
    child.stdin.end();
    return exited;
  };
  return { connection, updates, permissions, next, close };
}

/** Wait until process `pid` is gone (a zombie counts as gone: it no longer runs). */
async function gone(pid) {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return;
    }
    if (stat.slice(stat.lastIndexOf(")") + 1).trim().startsWith("Z")) return;
    assert.ok(Date.now() < until, `process ${pid} still runs after the cancel`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const textOf = (updates, kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
const contentText = (update) => JSON.stringify(update.content ?? []);

// First process: initialize, a new session, a bash call approved in ask mode, cancel mid-tool.
const first = connect();
const init = await first.connection.initialize({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: {},
});
assert.equal(init.protocolVersion, 1);
assert.equal(init.agentCapabilities.loadSession, true);
assert.equal(init.agentCapabilities.promptCapabilities.image, true);
assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
assert.deepEqual(init.authMethods, []);

const session = await first.connection.newSession({ cwd, mcpServers: [] });
const sessionId = session.sessionId;
assert.equal(session.modes.currentModeId, "ask");
assert.deepEqual(
  session.modes.availableModes.map((m) => m.id),
  ["ask", "auto", "read-only", "plan"],
);

const answered = await first.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "run it" }],
});
assert.equal(answered.stopReason, "end_turn");
assert.equal(first.permissions.length, 1, "bash asked once in ask mode");
assert.equal(first.permissions[0].toolCall.toolCallId, "c1");
const call = first.updates.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "c1");
assert.ok(call, "the bash call was shown");
assert.equal(call.kind, "execute");
assert.equal(call.rawInput.command, "echo from-bash");
const done = first.updates.find(
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "c1" && u.status === "completed",
);
assert.ok(done, "the bash call completed");
assert.match(contentText(done), /from-bash/);
assert.equal(textOf(first.updates, "agent_message_chunk"), "All done");
assert.ok(
  first.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").length > 1,
  "the answer streamed in chunks",
);

// A command that prints a line and then waits: cancel it once its output is shown; its
// process is killed.
const waiting = first.next(
  "the waiting command's output",
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "c2" && /waiting/.test(contentText(u)),
);
const cancelled = first.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "wait for it" }],
});
await waiting;
await first.connection.cancel({ sessionId });
assert.equal((await cancelled).stopReason, "cancelled");
const ended = first.updates.find(
  (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "c2" && u.status === "failed",
);
assert.ok(ended, "the cancelled call was answered");
await gone(Number(readFileSync(join(cwd, "pid"), "utf8").trim()));
assert.equal(await first.close(), 0, "the agent exits 0 when the client leaves");

// Second process: load the session; its conversation is replayed before the answer.
const second = connect();
await second.connection.initialize({ protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
await second.connection.loadSession({ sessionId, cwd, mcpServers: [] });
const replayed = [...second.updates];
assert.match(textOf(replayed, "user_message_chunk"), /run it/);
assert.match(textOf(replayed, "agent_message_chunk"), /All done/);
const replayedCall = replayed.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "c1");
assert.ok(replayedCall, "the bash call was replayed");
const again = await second.connection.prompt({
  sessionId,
  prompt: [{ type: "text", text: "again" }],
});
assert.equal(again.stopReason, "end_turn");
assert.equal(textOf(second.updates.slice(replayed.length), "agent_message_chunk"), "Still here");
assert.equal(await second.close(), 0);

console.log(
  JSON.stringify({
    sessionId,
    firstUpdates: first.updates.map((u) => u.sessionUpdate),
    replayed: replayed.map((u) => u.sessionUpdate),
  }),
);
