/** Memory: one gateway's RSS under a mixed load. */
import fs from "node:fs";
import { load } from "./http-load";
import { startGatewayProcess } from "./processes";
import { dir, json, keep } from "./session";

export /** RSS of one gateway under a mixed load for `seconds` (public reads, previews, treasury registrations, deposits), sampled every 5 s */
async function soak(seconds: number) {
  const gw = keep(await startGatewayProcess(dir, {}));
  const rss = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${gw.proc.pid}/status`, "utf8"))?.[1] ?? NaN) / 1024);
  const keys = [(await json(`${gw.url}/api/v1/sandbox/keys`, { method: "POST" })).key as string];
  const samples: { at_s: number; rss_mb: number }[] = [{ at_s: 0, rss_mb: rss() }];
  const t0 = performance.now();
  const timer = setInterval(() => samples.push({ at_s: Math.round((performance.now() - t0) / 1000), rss_mb: rss() }), 5000);
  let n = 0;
  const opts = { connections: 3, seconds };
  const loads = await Promise.all([
    load("soak gateway-status", { url: `${gw.url}/api/v1/public/gateway-status` }, opts),
    load("soak preview", { url: `${gw.url}/api/v1/public/preview`, body: () => JSON.stringify({ action: "deposit", amount: 1000 }) }, opts),
    load(
      "soak treasuries",
      { url: `${gw.url}/api/v1/treasuries`, body: () => JSON.stringify({ wallet_address: `0x${(0xb0000000 + n++).toString(16).padStart(40, "0")}` }) },
      opts,
    ),
    // one treasury's actions are serialized by its conflict slot: one connection
    load(
      "soak deposits",
      {
        url: `${gw.url}/api/v1/deposits`,
        body: () => JSON.stringify({ amount_usdc: 100 }),
        headersOf: (i) => ({ authorization: `Bearer ${keys[0]}`, "idempotency-key": `soak-${i}-${n++}` }),
      },
      { ...opts, connections: 1 },
    ),
  ]);
  clearInterval(timer);
  samples.push({ at_s: Math.round((performance.now() - t0) / 1000), rss_mb: rss() });
  await gw.stop();
  return { seconds, requests: loads.reduce((a, l) => a + l.requests, 0), failures: loads.reduce((a, l) => a + l.failures, 0), samples };
}
