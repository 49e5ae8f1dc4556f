/**
 * A smoke test of `npm start`: the whole local stack boots on free ports and
 * its own data directory, answers, pays and relays nothing yet, and stops on
 * SIGTERM with every child.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

it("npm start boots the fork, Base Sepolia, the facilitator and the gateway, and stops them on SIGTERM", async () => {
  const [fork, sepolia, facilitator, gateway] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-"));
  const stack = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: ROOT,
    env: {
      ...process.env,
      FORK_PORT: String(fork),
      BASE_SEPOLIA_PORT: String(sepolia),
      FACILITATOR_PORT: String(facilitator),
      PORT: String(gateway),
      DATA_DIR: dataDir,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  stack.stdout.on("data", (d) => (out += d));
  stack.stderr.on("data", (d) => (out += d));
  try {
    for (let i = 0; i < 300 && !out.includes("local stack running"); i++) await new Promise((r) => setTimeout(r, 100));
    expect(out, out).toContain("local stack running");
    // the stack measures its own start, per part
    expect(out).toMatch(/ready [\d.]+ s after start \(processes from bundles/);
    const status = await (await fetch(`http://127.0.0.1:${gateway}/api/v1/public/gateway-status`)).json();
    expect(status).toMatchObject({ object: "gateway_status", status: "online" });
    // the gateway reads the fork: market rates are live from the fork's Pool
    const rates = (await (await fetch(`http://127.0.0.1:${gateway}/api/v1/public/market-rates`)).json()) as { rates: { chain: string }[] };
    expect(rates.rates.find((r: { chain: string }) => r.chain === "base")).toMatchObject({ source: "aave_v3_pool_rpc" });
    // a priced route answers the x402 challenge
    expect((await fetch(`http://127.0.0.1:${gateway}/api/v1/treasury`)).status).toBe(402);
    // the facilitator is supervised like the gateway: killed (-9), it is started again
    const killed = childPidOf(stack.pid!, "facilitator");
    process.kill(killed, "SIGKILL");
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      await new Promise((r) => setTimeout(r, 100));
      back =
        // it answers again, its gateways only (the stack's key; none here: 401)
        (await fetch(`http://127.0.0.1:${facilitator}/supported`)
          .then((r) => r.status === 401)
          .catch(() => false)) && childPidOf(stack.pid!, "facilitator") !== killed;
    }
    expect(back, out).toBe(true);
    expect(out).toContain("restarting facilitator");
  } finally {
    const exited = new Promise<number | null>((r) => stack.once("exit", (code) => r(code)));
    stack.kill("SIGTERM");
    expect(await exited).toBe(0);
  }
  // every port is free again
  await expect(fetch(`http://127.0.0.1:${gateway}/api/v1/public/gateway-status`)).rejects.toThrow();
}, 90_000);

/** the pid of a child of `parent` whose command line names `what` (read from /proc: no ps needed) */
function childPidOf(parent: number, what: string): number {
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent && fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(what)) return Number(entry);
    } catch {
      // the process ended meanwhile
    }
  }
  throw new Error(`no child of ${parent} runs ${what}`);
}
