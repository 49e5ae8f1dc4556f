/**
 * Debian's Chromium for the browser tests (installed by .ci/run), launched
 * headless with the flags this machine's closed network needs. Outside CI a
 * machine without it skips those files and says how to enable it; CI
 * (REQUIRE_BROWSER=1) always runs them.
 */
import fs from "node:fs";
import { chromium, type Browser } from "playwright-core";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter((p): p is string =>
  Boolean(p),
);

export const CHROMIUM = CANDIDATES.find((p) => fs.existsSync(p));
export const ENABLE_BROWSER = "sudo apt-get install -y chromium (or set CHROMIUM_PATH to a Chromium or Chrome binary)";

/** throws in CI when Chromium is missing; elsewhere warns that `file` is skipped */
export function requireBrowserOrSkip(file: string): void {
  if (CHROMIUM) return;
  if (process.env.REQUIRE_BROWSER === "1") throw new Error(`Chromium not found (looked at ${CANDIDATES.join(", ")}); .ci/run installs Debian's chromium`);
  console.warn(`[${file}] SKIPPED: no Chromium on this machine (looked at ${CANDIDATES.join(", ")}). Enable it with: ${ENABLE_BROWSER}`);
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // without the background-networking flags Chromium's own connections are refused by the closed network
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
}
