// For the `web` bench scenario (benches/scenarios/web.rs): loads the web client RUNS times in
// a fresh browser context each (nothing cached) and prints one JSON line per load: the first
// contentful paint and the time until the session list is shown, in ms from navigation.
// Environment: WEB_URL, CHROMIUM, RUNS. The browser gets a fresh profile (a temporary
// --user-data-dir that playwright makes and removes).
import { chromium } from "playwright-core";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
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
try {
  for (let i = 0; i < Number(process.env.RUNS || 5); i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${process.env.WEB_URL}/`);
    await page.waitForFunction(() => !document.querySelector("#sessions").innerText.includes("loading"), null, { timeout: 120_000 });
    const times = await page.evaluate(() => {
      const listed = performance.now();
      const paint = performance.getEntriesByName("first-contentful-paint")[0];
      return { firstPaintMs: paint ? paint.startTime : null, listedMs: listed };
    });
    console.log(JSON.stringify(times));
    await context.close();
  }
} finally {
  await browser.close();
}
