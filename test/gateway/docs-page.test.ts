/**
 * The API reference at /docs renders in a real headless Chromium (Debian's
 * chromium, installed by .ci/run) from local assets only. Outside CI, a
 * machine without Chromium skips this file and says how to enable it; CI
 * (REQUIRE_BROWSER=1, set by .ci/run) always runs it.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";

import { CHROMIUM, ENABLE_BROWSER as ENABLE, launchBrowser, requireBrowserOrSkip } from "../helpers/browser";

requireBrowserOrSkip("docs-page.test");

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  if (!CHROMIUM) return;
  gw = await startTestGateway();
  browser = await launchBrowser();
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
    // the paths' operations and the webhooks' (one per event type)
    const operations = [...Object.values(doc.paths), ...Object.values(doc.webhooks ?? {})].reduce((n: number, p: any) => n + Object.keys(p).length, 0);
    expect(await page.locator(".opblock").count()).toBe(operations);
    expect(await page.locator(".opblock-summary-path", { hasText: "/api/v1/public/preview" }).count()).toBe(1);
    await page.screenshot({ path: `${gw.dataDir}/docs.png` });
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
