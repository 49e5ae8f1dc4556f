/**
 * State across a restart of `npm start`: the chains are kept in DATA_DIR beside the store that records them, so
 * a stopped and started stack shows the same positions in both; `npm start -- --fresh` starts both over. What
 * agrees is read from each side: the store's treasury and fee record (its own store methods) and the agent's
 * balances on the fork (Aave's aUSDC, the USDC token).
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, http } from "viem";
import { describe, expect, it } from "vitest";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { freePort, startAnvil } from "../../fixtures/anvil";
import { forkManifest } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { SecretBox } from "../../gateway/src/lib/secrets";
import { createStores } from "../../gateway/src/services/context";
import { openDatabase } from "../../gateway/src/store/open-database";

const ROOT = path.resolve(__dirname, "../..");
const PASSPHRASE = "demo-passphrase-not-secret";

describe.skipIf(process.env.TEST_STORE === "postgres")("npm start, stopped and started again", () => {
  it("a kept chain's clock goes on after a restart, even when its blocks ran ahead of the wall clock", async () => {
    const kept = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kept-chain-")), "chain.json");
    let node = await startAnvil({ chainId: 8453, keepState: kept, timestampInterval: 2 });
    const at = async () => (await createPublicClient({ transport: http(node.rpcUrl) }).getBlock()).timestamp;
    // 100 blocks 2 s apart in a moment: the chain's time is 200 s ahead of the wall clock
    await createPublicClient({ transport: http(node.rpcUrl) }).request({ method: "anvil_mine" as never, params: ["0x64"] as never });
    const before = await at();
    expect(before).toBeGreaterThan(BigInt(Math.floor(Date.now() / 1000)) + 150n);
    await node.stop();
    node = await startAnvil({ chainId: 8453, keepState: kept, timestampInterval: 2 });
    try {
      expect(node.restored).toBe(true);
      expect(await at()).toBeGreaterThan(before);
    } finally {
      await node.stop();
    }
  });

  it("keeps the chains with the store (the deposit is in both), and --fresh starts both over", async () => {
    const [fork, sepolia, facilitator, gateway] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "restart-stack-"));
    const stackFile = path.join(dataDir, "stack.json");
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SIGNER_|OPERATOR_|FORK_|PORT$|DATA_DIR$|DATABASE_URL$|STACK_)/.test(k)));
    const env = {
      ...clean,
      STACK_FILE: stackFile,
      FORK_PORT: String(fork),
      BASE_SEPOLIA_PORT: String(sepolia),
      FACILITATOR_PORT: String(facilitator),
      PORT: String(gateway),
      DATA_DIR: dataDir,
    };
    const agent = devAccount(3).address;
    const m = forkManifest();
    const chain = createPublicClient({ transport: http(`http://127.0.0.1:${fork}`) });
    const balances = async () => {
      const [aUsdc, usdc] = await Promise.all(
        [m.reserves.USDC.a_token, m.tokens.USDC].map((token) =>
          chain.readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [agent] }),
        ),
      );
      return { aUsdc: aUsdc!, usdc: usdc! };
    };
    /** the store's side, read with the stack stopped: the agent's treasury and its fee-bearing actions */
    const storeSays = async () => {
      const db = await openDatabase({ file: path.join(dataDir, "gateway.sqlite") });
      try {
        const stores = createStores(db, SecretBox.ephemeral());
        const t = await stores.treasuries.findOwnedByWallet(agent);
        return { treasury: t?.id ?? null, fees: t ? (await stores.fees.forTreasury(t.id)).length : 0 };
      } finally {
        await db.close();
      }
    };
    const start = async (...args: string[]) => {
      const stack = spawn(process.execPath, ["scripts/start.mjs", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      stack.stdout.on("data", (d) => (out += d));
      stack.stderr.on("data", (d) => (out += d));
      for (let i = 0; i < 600 && !out.includes("local stack running"); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out, out).toContain("local stack running");
      return {
        out: () => out,
        stop: async () => {
          const exited = new Promise<number | null>((r) => stack.once("exit", (code) => r(code)));
          stack.kill("SIGTERM");
          expect(await exited).toBe(0);
        },
      };
    };

    // first start: new chains, the agent funded, then a deposit through the whole wallet loop
    let stack = await start();
    expect(stack.out()).toContain("chains        new");
    const r = spawnSync("bash", ["-e", "-c", `SIGNER_PASSPHRASE=${PASSPHRASE} npx signer-agent run deposit 500`], {
      cwd: ROOT,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    const afterDeposit = await balances();
    // 500 USDC less the deposit fee
    expect(afterDeposit.aUsdc).toBeGreaterThanOrEqual(490_000_000n);
    await stack.stop();
    const recorded = await storeSays();
    expect(recorded.treasury).not.toBeNull();
    expect(recorded.fees).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(path.join(dataDir, "chains", "base-fork.json"))).toBe(true);

    // started again: the same chain (the deposit, not a second funding) and the same store
    stack = await start();
    expect(stack.out()).toContain("chains        restored from the last run");
    const restored = await balances();
    expect(restored.usdc).toBe(afterDeposit.usdc);
    expect(restored.aUsdc).toBeGreaterThanOrEqual(afterDeposit.aUsdc);
    await stack.stop();
    expect(await storeSays()).toEqual(recorded);

    // another store (or fork) than the chains were kept with is refused before anything starts
    const other = spawnSync(process.execPath, ["scripts/start.mjs"], {
      cwd: ROOT,
      env: { ...env, DATABASE_URL: "postgres://someone@127.0.0.1:1/elsewhere" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(other.status, `${other.stdout}${other.stderr}`).toBe(2);
    expect(other.stderr).toContain('were kept with the store "SQLite"');
    expect(other.stderr).toContain("npm start -- --fresh");

    // --fresh: both over, together
    stack = await start("--fresh");
    expect(stack.out()).toContain("chains        new");
    const fresh = await balances();
    expect(fresh).toEqual({ aUsdc: 0n, usdc: 10_000_000_000n });
    await stack.stop();
    expect(await storeSays()).toEqual({ treasury: null, fees: 0 });
    // the keystores are kept
    expect(fs.existsSync(path.join(dataDir, "agent", "keystore.json"))).toBe(true);
  }, 240_000);
});
