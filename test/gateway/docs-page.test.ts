/**
 * The API reference at /docs renders in a real headless Chromium (Debian's
 * chromium, installed by .ci/run) from local assets only. Outside CI, a
 * machine without Chromium skips this file and says how to enable it; CI
 * (REQUIRE_BROWSER=1, set by .ci/run) always runs it.
 */
import fs from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter((p): p is string => Boolean(p));
const CHROMIUM = CANDIDATES.find((p) => fs.existsSync(p));
const ENABLE = "sudo apt-get install -y chromium (or set CHROMIUM_PATH to a Chromium or Chrome binary)";
if (!CHROMIUM) {
  if (process.env.REQUIRE_BROWSER === "1") throw new Error(`Chromium not found (looked at ${CANDIDATES.join(", ")}); .ci/run installs Debian's chromium`);
  console.warn(`[docs-page.test] SKIPPED: no Chromium on this machine (looked at ${CANDIDATES.join(", ")}). Enable it with: ${ENABLE}`);
}

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  if (!CHROMIUM) return;
  gw = await startTestGateway();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

describe.skipIf(!CHROMIUM)(`/docs${CHROMIUM ? "" : ` (skipped: no Chromium; enable with: ${ENABLE})`}`, () => {
  it("renders every operation of /openapi.json with no request leaving the host", async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(gw.url)) foreign.push(r.url());
    });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${gw.url}/docs`, { waitUntil: "networkidle" });
    await page.waitForSelector(".opblock", { timeout: 20_000 });
    const title = await page.textContent(".info .title");
    expect(title).toContain("Agent Treasury Gateway");
    const doc = (await call(gw.url, "GET", "/openapi.json")).body;
    const operations = Object.values(doc.paths).reduce((n: number, p: any) => n + Object.keys(p).length, 0);
    expect(await page.locator(".opblock").count()).toBe(operations);
    expect(await page.locator(".opblock-summary-path", { hasText: "/api/v1/public/preview" }).count()).toBe(1);
    await page.screenshot({ path: `${gw.dataDir}/docs.png` });
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
