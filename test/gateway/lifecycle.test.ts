import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");

describe("npm start entry (gateway/src/main.ts)", () => {
  it("serves on PORT with its database under DATA_DIR, logs JSON, and exits 0 on SIGTERM", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-main-"));
    const port = 40_000 + Math.floor(Math.random() * 10_000);
    const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    try {
      const deadline = Date.now() + 20_000;
      while (!out.includes("gateway listening")) {
        if (Date.now() > deadline) throw new Error(`gateway did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/public/gateway-status`);
      expect(res.status).toBe(200);
      expect(fs.existsSync(path.join(dataDir, "gateway.sqlite"))).toBe(true);
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      const lines = out
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.some((l) => l.msg === "request completed" && typeof l.request_id === "string")).toBe(true);
      expect(lines.at(-1).msg).toBe("stopped");
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 40_000);

  it("finishes a request in flight on SIGTERM, refuses new ones, then exits 0", async () => {
    // an RPC that holds its answer until the test releases it: the request is in flight for as long as we say
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let received = 0;
    const rpc = http.createServer((req, res) => {
      received++;
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", async () => {
        await held;
        const { id } = JSON.parse(body) as { id: number };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32000, message: "held then refused" } }));
      });
    });
    await new Promise<void>((r) => rpc.listen(0, "127.0.0.1", () => r()));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-main-"));
    const port = 40_000 + Math.floor(Math.random() * 10_000);
    const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/main.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        DATA_DIR: dataDir,
        ETHEREUM_RPC_URL: `http://127.0.0.1:${(rpc.address() as AddressInfo).port}`,
        RPC_TIMEOUT_MS: "20000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    try {
      while (!out.includes("gateway listening")) await new Promise((r) => setTimeout(r, 100));
      const inFlight = fetch(`http://127.0.0.1:${port}/api/v1/public/market-rates`);
      while (received === 0) await new Promise((r) => setTimeout(r, 20));
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      while (!out.includes("shutting down")) await new Promise((r) => setTimeout(r, 20));
      // a new connection is refused while the old request is still being served
      await expect(fetch(`http://127.0.0.1:${port}/api/v1/public/gateway-status`)).rejects.toThrow();
      release();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(((await res.json()) as { object: string }).object).toBe("market_rates");
      expect(await exit).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      rpc.close();
    }
  }, 40_000);

  it("refuses an invalid configuration with exit code 2", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "not-a-port" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/PORT/);
  }, 30_000);
});
