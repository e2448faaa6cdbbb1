// Drives `agent serve --web` in a real headless Chromium, as a person would, for
// tests/it/web_client.rs: open the page (without a token it asks for one), sign in with the
// token in the URL fragment, start a session, send a prompt and watch its deltas arrive,
// reload mid-stream and see the same transcript, steer and queue a follow-up, abort, approve
// a command in the dialog and read its collapsed output, see the todo list and the sub-agent
// tree, reload once more. Every wait is for a condition, with a bound
// far above what a loaded machine needs. Prints `STEP name` as it goes and `OK` at the end;
// any failure is `FAIL: why` and exit 1.
//
// Environment: WEB_URL (http://127.0.0.1:PORT), WEB_TOKEN, CHROMIUM (the browser),
// USER_DATA_DIR (a fresh directory), SHOTS (optional: a directory for screenshots).
import { chromium } from "playwright-core";

const URL_ = process.env.WEB_URL;
const TOKEN = process.env.WEB_TOKEN;
const SHOTS = process.env.SHOTS || "";
const WAIT = 120_000; // per condition: generous, CI is a loaded 2-core machine

const step = (name) => console.log(`STEP ${name}`);
function check(condition, why) {
  if (!condition) throw new Error(why);
}

const context = await chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
  executablePath: process.env.CHROMIUM,
  headless: true,
  timeout: WAIT,
  viewport: { width: 1280, height: 800 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
context.setDefaultTimeout(WAIT);
const page = context.pages()[0] || (await context.newPage());
const problems = [];
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
page.on("console", (m) => {
  if (m.type() === "error" && !/status of 40[13]/.test(m.text())) problems.push(`console: ${m.text()}`);
});

const shot = async (name, viewport) => {
  if (!SHOTS) return;
  const before = page.viewportSize();
  if (viewport) await page.setViewportSize(viewport);
  // The side panel slides away on a narrow screen: once it is still.
  await page.waitForFunction(() => document.getAnimations().length === 0 || !!document.querySelector(".msg.streaming"));
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
  if (viewport) await page.setViewportSize(before);
};
const transcript = () => page.$eval("#transcript", (t) => t.innerText);
const visible = (selector) => page.waitForSelector(selector, { state: "visible" });

try {
  step("no token: the page asks for one");
  await page.goto(`${URL_}/`);
  await visible("#signin");
  check(await page.isHidden("#composer"), "the prompt box shows before signing in");

  step("sign in with the token in the fragment");
  await page.goto(`${URL_}/#token=${encodeURIComponent(TOKEN)}`);
  await page.waitForFunction(() => document.querySelector("#sessions").innerText.includes("No sessions yet"));
  check(!page.url().includes(TOKEN), `the token stayed in the address: ${page.url()}`);
  check((await page.evaluate(() => document.cookie)) === "", "the sign-in cookie is readable by scripts");
  check(await page.isHidden("#signin"), "still asking for a token");

  step("start a session");
  await page.click("#new-session");
  await visible("#composer");
  await page.waitForFunction(() => /session=/.test(location.hash));

  step("send a prompt and watch the deltas arrive");
  // Every text the streaming message shows, in order.
  await page.evaluate(() => {
    window.seen = [];
    new MutationObserver(() => {
      const node = document.querySelector(".msg.assistant.streaming");
      const text = node ? node.innerText.trim() : "";
      if (text && window.seen[window.seen.length - 1] !== text) window.seen.push(text);
    }).observe(document.querySelector("#transcript"), { subtree: true, childList: true, characterData: true });
  });
  await page.fill("#prompt", "first question");
  await page.press("#prompt", "Enter");
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.user")].some((m) => m.innerText.includes("first question")));
  await page.waitForFunction(() => {
    const node = document.querySelector(".msg.assistant.streaming");
    return node && node.innerText.includes("Hello from the web client");
  });
  const seen = await page.evaluate(() => window.seen);
  check(seen.length >= 2, `the answer did not arrive in pieces: ${JSON.stringify(seen)}`);
  check(
    seen.every((text, i) => i === 0 || text.startsWith(seen[i - 1].replace(/\s+$/, ""))),
    `the streamed text did not grow: ${JSON.stringify(seen)}`,
  );
  await visible("#abort");
  await shot("desktop-streaming");

  step("reload mid-stream: the same transcript");
  const before = await transcript();
  await page.reload();
  await page.waitForFunction(() => {
    const node = document.querySelector(".msg.assistant.streaming");
    return node && node.innerText.includes("Hello from the web client");
  });
  const after = await transcript();
  check(after === before, `the transcript differs after a reload:\n--- before\n${before}\n--- after\n${after}`);
  await visible("#abort");

  step("steer and queue a follow-up while it runs");
  await page.fill("#prompt", "steer this way");
  await page.press("#prompt", "Enter");
  await page.fill("#prompt", "and then this");
  await page.click("#follow-up");
  await page.waitForFunction(() => {
    const queue = document.querySelector("#queue").innerText;
    return queue.includes("steer: steer this way") && queue.includes("follow-up: and then this");
  });

  step("abort");
  await page.click("#abort");
  await page.waitForSelector(".stop-aborted");
  await page.waitForSelector("#abort", { state: "hidden" });
  // The queued messages go with the run.
  await page.waitForSelector("#queue", { state: "hidden" });
  check((await page.$(".msg.assistant.streaming")) === null, "still streaming after the abort");

  step("a command waits for approval");
  await page.fill("#prompt", "run it");
  await page.press("#prompt", "Enter");
  await visible("#approval");
  check((await page.textContent("#approval-title")).includes("bash"), "the dialog does not name the tool");
  check((await page.textContent("#approval-body")).includes("echo approved-"), "the dialog does not show the command");
  for (const choice of ["allow", "allow_session", "deny", "deny_message"]) {
    check(await page.isVisible(`[data-decision="${choice}"]`), `the dialog lacks ${choice}`);
  }
  await shot("desktop-approval");
  await shot("phone-approval", { width: 390, height: 844 });

  step("approve it");
  await page.click('[data-decision="allow"]');
  await page.waitForSelector("#approval", { state: "hidden" });
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant")].some((m) => m.innerText.includes("All done")));
  const card = await page.waitForSelector('.tool.done[data-tool-call-id="c1"]');
  check(!(await card.evaluate((c) => c.open)), "the tool's output is not collapsed");
  check(!(await card.evaluate((c) => c.innerText)).includes("approved-42"), "the collapsed output shows");
  await card.click();
  await page.waitForFunction(() => document.querySelector('.tool.done[data-tool-call-id="c1"] pre.output')?.innerText.includes("approved-42"));
  step("the model's markup is shown as text, never run");
  await page.waitForFunction(() => document.querySelector("#transcript pre.code")?.innerText.includes("<script>"));
  const injected = await page.evaluate(() => ({
    pwned: window.pwned,
    images: document.querySelectorAll("#transcript img").length,
    scripts: document.querySelectorAll("#transcript script").length,
    bold: document.querySelectorAll("#transcript b").length,
    links: [...document.querySelectorAll("#transcript a")].map((a) => a.getAttribute("href")),
  }));
  check(
    injected.pwned === undefined && injected.images === 0 && injected.scripts === 0 && injected.bold === 0 && injected.links.length === 0,
    `the answer's markup became HTML: ${JSON.stringify(injected)}`,
  );
  check((await transcript()).includes('<img src=x onerror="window.pwned=1">'), "the answer's markup is not shown as text");

  step("the todo list and the sub-agent tree");
  await page.waitForFunction(() => document.querySelector("#todos").innerText.includes("Run the command"));
  await page.waitForFunction(() => {
    const tree = document.querySelector("#agents").innerText;
    return tree.includes("general") && tree.includes("completed");
  });
  await shot("desktop-done");
  await shot("phone-done", { width: 390, height: 844 });
  await card.evaluate((c) => (c.open = false));

  step("reload after the run: the same transcript");
  const done = await transcript();
  await page.reload();
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant")].some((m) => m.innerText.includes("All done")));
  const again = await transcript();
  check(again === done, `the transcript differs after a reload:\n--- before\n${done}\n--- after\n${again}`);
  check(await page.isVisible(".session.live.current"), "the session is not listed as live and current");
  await page.waitForFunction(() => document.querySelector("#todos").innerText.includes("Report back"));
  await page.waitForFunction(() => document.querySelector("#agents").innerText.includes("general"));

  if (SHOTS) {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click("#menu");
    await page.waitForFunction(() => getComputedStyle(document.querySelector("#side")).transform === "none");
    await shot("phone-drawer");
  }
  check(problems.length === 0, problems.join("\n"));
  console.log("OK");
  await context.close();
} catch (e) {
  console.log(`FAIL: ${e.message}`);
  if (problems.length) console.log(problems.join("\n"));
  try {
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/failure.png` });
    console.log(`--- transcript\n${await transcript()}`);
  } catch {}
  await context.close();
  process.exit(1);
}
