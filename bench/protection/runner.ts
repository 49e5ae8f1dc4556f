/**
 * The protection scenario runner: a managed Safe (WETH collateral, USDC
 * borrowed and spent, delegation active) and its unprotected twin (the same
 * position, no module) live through a price path on the offline Base fork,
 * one block at a time: the ETH and BTC feeds move, an arbitrageur trades the
 * Uniswap pools to the same prices, the protection engine(s) take their pass,
 * and a liquidator calls Aave's own liquidationCall on any position whose
 * health factor is under 1. Aave is the judge: a liquidation is Aave's, not
 * the runner's, verdict.
 *
 * Engines run in this process (one or several ProtectionEngines on the
 * gateway's store, each block's passes at once) or as their own process
 * (gateway/src/protection/main.ts), which the runner can kill -9 in the middle
 * of an act and start again.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { createTestClient, createWalletClient, encodeFunctionData, http, parseAbi, parseEventLogs, publicActions, type Hex, type Log } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import { arbitrageTo } from "../../fixtures/arbitrageur";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { loadConfig } from "../../gateway/src/config";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { startGateway, type RunningGateway } from "../../gateway/src/server";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import { Operator } from "../../signer-agent/src/operator";
import { pathNamed } from "./paths";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const m = AAVE_MARKETS.base;
const LIQUIDATION_ABI = parseAbi([
  "function liquidationCall(address collateralAsset, address debtAsset, address user, uint256 debtToCover, bool receiveAToken)",
]);
const WAD = 10n ** 18n;
const COLLATERAL_WETH = 10n * WAD;

export interface ScenarioOptions {
  /** a path's name (paths.ts pathNamed: slide, fast-drop, wick, random-<seed>) */
  path: string;
  /** the position's LTV at the start, percent (at 3,000 USD per ETH: 60 is the ceiling) */
  startLtvPct: number;
  /** engines in this process, each block's passes at once (0: protection off for both Safes) */
  engines?: number;
  /** one engine as its own process instead, killed with SIGKILL at its first act and started again */
  crash?: boolean;
  /** the store (a test passes its own); a SQLite file in a temporary directory otherwise */
  database?: DatabaseLocation;
}

export interface SafeOutcome {
  lowest_health: number;
  liquidations: number;
  /** collateral a liquidator took beyond the debt it repaid, USD at the oracle */
  liquidation_bonus_lost_usd: number;
  /** collateral - debt + idle USDC and WETH at the end, USD at the final oracle prices */
  equity_end_usd: number;
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  start_ltv_pct: number;
  blocks: number;
  engines: string;
  protected: SafeOutcome & {
    deleverages: number;
    /** executed protection actions recorded in the store (one per claimed trigger) */
    recorded_actions: number;
    triggers: number;
    /** from the first block under the trigger to the block of the first deleverage */
    blocks_trigger_to_act: number | null;
    /** the longest stretch, in blocks, the health factor stayed under the trigger after crossing it */
    max_blocks_under_trigger: number;
    gas_usd: number;
    /** oracle value of the collateral sold minus the USDC received, USD */
    slippage_vs_oracle_usd: number;
    flash_premium_usd: number;
    ltv_end_pct: number;
  };
  baseline: SafeOutcome;
  equity_kept_vs_baseline_usd: number;
  /** what the in-process engines answered for the protected Safe while it was under the trigger: outcome and detail, counted */
  engine_answers_under_trigger?: Record<string, number>;
  /** the crash run: when the engine was killed and what its claim held then */
  crash?: { killed_at_block: number; signed_transactions_on_the_claim: number; pending_when_killed: number };
  /** per block: ETH price, each Safe's health factor after the market moved (before anyone acted) */
  series: { block: number; eth: number; protected: number; baseline: number }[];
}

const usd = (base8: bigint) => Number(base8) / 1e8;
const health = (hf: bigint) => (hf > 100n * WAD ? 100 : Number(hf) / 1e18);

/**
 * Play one scenario in a process of its own (protocol-kit keeps the clients of the first chain it meets per
 * chain id, so each fresh fork gets a fresh process): bench/protection/child.ts runs runScenarioHere.
 */
export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "scenario-result-")), "result.json");
  const child = spawn(process.execPath, ["--import", "tsx", "bench/protection/child.ts"], {
    cwd: ROOT,
    env: { ...process.env, SCENARIO: JSON.stringify(o), SCENARIO_OUT: out },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0 || !fs.existsSync(out)) throw new Error(`scenario ${o.path} at ${o.startLtvPct}% exited with ${code}`);
  return JSON.parse(fs.readFileSync(out, "utf8")) as ScenarioResult;
}

/** play one scenario on a fresh fork and gateway in this process; everything is stopped after */
export async function runScenarioHere(o: ScenarioOptions): Promise<ScenarioResult> {
  const trigger = 1.3;
  const pricePath = pathNamed(o.path);
  const fork = await startBaseFork();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "scenario-"));
  const automationKey = generatePrivateKey();
  const automation = privateKeyToAccount(automationKey);
  let gw: RunningGateway | undefined;
  const children: ChildProcess[] = [];
  try {
    await fork.fund(automation.address);
    const config = loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      BASE_RPC_URL: fork.rpcUrl,
      AUTOMATION_ADDRESS: automation.address,
      RATE_LIMIT_READ_PER_MIN: "1000000",
      RATE_LIMIT_WRITE_PER_MIN: "1000000",
      CREDENTIALS_PER_HOUR: "100000",
    });
    const database: DatabaseLocation = o.database ?? { file: path.join(dataDir, "gateway.sqlite") };
    gw = await startGateway({ config, logger: pino({ level: "silent" }), database });
    const url = `http://127.0.0.1:${gw.port}`;
    const client = createWalletClient({
      account: privateKeyToAccount(generatePrivateKey()),
      chain: base,
      transport: http(fork.rpcUrl),
      pollingInterval: 20,
    }).extend(publicActions);
    const anvil = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });

    const debt = (BigInt(o.startLtvPct) * 30_000n * 10n ** 6n) / 100n;
    const protectedSafe = await borrower(fork, debt);
    const twin = await borrower(fork, debt);
    const engines = o.engines ?? 1;
    let treasuryId: string | undefined;
    let apiKey: string | undefined;
    let module: `0x${string}` | undefined;
    if (engines > 0 || o.crash) {
      const registered = await post(url, "/api/v1/treasuries", {
        wallet_address: protectedSafe.safe,
        execution_mode: "managed",
        ownership_proof: await protectedSafe.operator.ownershipProof(url, "managed"),
      });
      treasuryId = registered.treasury_id;
      apiKey = registered.api_key;
      module = await protectedSafe.operator.deployModule(automation.address, 2500);
      const safe_proof = await protectedSafe.operator.delegationProof({
        service: url,
        treasuryId: treasuryId!,
        module,
        protectBelowHealth: trigger,
        parkTargetBps: 2500,
      });
      await post(url, "/api/v1/delegation", { module, safe_proof }, apiKey);
      await protectedSafe.operator.approveDelegation(module);
    }

    const inline = o.crash ? [] : Array.from({ length: engines }, () => new ProtectionEngine(gw!.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey }));
    /** the engine as its own process; resolves once it says it runs (a restart is as fast as the supervisor, not as tsx's start-up) */
    const startEngineProcess = async () => {
      const child = spawn(process.execPath, ["--import", "tsx", "gateway/src/protection/main.ts"], {
        cwd: ROOT,
        env: {
          ...process.env,
          ...("url" in database ? { DATABASE_URL: database.url } : { DATA_DIR: dataDir }),
          BASE_RPC_URL: fork.rpcUrl,
          AUTOMATION_PRIVATE_KEY: automationKey,
          PROTECTION_INTERVAL_MS: "50",
          LEASE_MS: "1500",
          LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        let seen = "";
        child.stdout!.on("data", (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes("protection engine running")) resolve();
        });
        child.once("exit", (code) => reject(new Error(`the engine process exited with ${code} before it ran`)));
      });
      child.stdout!.resume();
      return child;
    };
    let engineProcess = o.crash ? await startEngineProcess() : undefined;
    let killed = false;
    let crash: ScenarioResult["crash"];

    // the liquidator: Aave's liquidationCall on any position under 1, with plenty of USDC
    const liquidator = createWalletClient({
      account: privateKeyToAccount(generatePrivateKey()),
      chain: base,
      transport: http(fork.rpcUrl),
      pollingInterval: 20,
    }).extend(publicActions);
    await fork.fund(liquidator.account.address, 10_000_000n * 10n ** 6n);
    await liquidator.waitForTransactionReceipt({
      hash: await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] }),
    });

    const account = async (who: `0x${string}`) => {
      const [collateral, debtBase, , , , hf] = await client.readContract({
        address: m.pool,
        abi: AAVE_POOL_ABI,
        functionName: "getUserAccountData",
        args: [who],
      });
      return { collateral, debt: debtBase, hf };
    };
    const outcome = () => ({ lowest: Number.POSITIVE_INFINITY, liquidations: 0, bonusLost: 0n });
    const p = outcome();
    const b = outcome();
    const liquidate = async (who: `0x${string}`, into: ReturnType<typeof outcome>) => {
      const before = await account(who);
      if (before.debt === 0n || before.hf >= WAD) return;
      const hash = await liquidator.writeContract({
        address: m.pool,
        abi: LIQUIDATION_ABI,
        functionName: "liquidationCall",
        args: [m.weth, m.usdc, who, 2n ** 255n, false],
        gas: 2_000_000n,
      });
      const receipt = await liquidator.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") return;
      const after = await account(who);
      into.liquidations++;
      into.bonusLost += before.collateral - after.collateral - (before.debt - after.debt);
    };

    const series: ScenarioResult["series"] = [];
    const sales: { block: number; eth: number; log: Log }[] = [];
    let fromBlock = (await client.getBlockNumber()) + 1n;
    let firstUnder: number | null = null;
    let firstAct: number | null = null;
    let under = 0;
    let maxUnder = 0;
    const answers: Record<string, number> = {};
    for (let i = 0; i < pricePath.eth.length; i++) {
      const eth = pricePath.eth[i]!;
      const btc = pricePath.btc[i]!;
      await fork.setPrice("WETH", eth);
      await fork.setPrice("cbBTC", btc);
      await arbitrageTo(fork.rpcUrl, "WETH", eth);
      await arbitrageTo(fork.rpcUrl, "cbBTC", btc);
      const [ps, bs] = await Promise.all([account(protectedSafe.safe), account(twin.safe)]);
      p.lowest = Math.min(p.lowest, health(ps.hf));
      b.lowest = Math.min(b.lowest, health(bs.hf));
      series.push({ block: i, eth, protected: health(ps.hf), baseline: health(bs.hf) });
      if (health(ps.hf) < trigger) {
        firstUnder ??= i;
        under++;
        maxUnder = Math.max(maxUnder, under);
      } else under = 0;

      if (inline.length > 0) {
        const passes = await Promise.all(inline.map((e) => e.tick()));
        if (health(ps.hf) < trigger)
          for (const r of passes.flat().filter((x) => x.treasuryId === treasuryId)) {
            // figures masked so that like answers count together; a failure's reason kept whole
            const key = `${r.outcome}: ${r.outcome === "failed" ? r.detail : (r.detail ?? "").replace(/[0-9.]+/g, "#")}`;
            answers[key] = (answers[key] ?? 0) + 1;
          }
      }
      if (engineProcess) {
        if (!killed && treasuryId && health(ps.hf) < trigger) {
          // the first act: blocks are held back (automine off) so the engine's signed deleverage is pending when
          // it dies; kill -9 once the claim holds the signed bytes, start a new engine, then let the block be mined
          await anvil.setAutomine(false);
          const deadline = Date.now() + 10_000;
          let claim = await gw.ctx.stores.protectionClaims.get(treasuryId);
          while (!(claim && claim.sent.length > 0) && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 5));
            claim = await gw.ctx.stores.protectionClaims.get(treasuryId);
          }
          engineProcess.kill("SIGKILL");
          killed = true;
          crash = {
            killed_at_block: i,
            signed_transactions_on_the_claim: claim?.sent.length ?? 0,
            pending_when_killed: (await client.getBlock({ blockTag: "pending" })).transactions.length,
          };
          engineProcess = await startEngineProcess();
          await anvil.setAutomine(true);
          await anvil.mine({ blocks: 1 });
        }
        // a block's time (2 s on Base, 120 ms here) for the process engine to take its pass
        await new Promise((r) => setTimeout(r, 120));
      }
      await liquidate(protectedSafe.safe, p);
      await liquidate(twin.safe, b);

      if (module) {
        const to = await client.getBlockNumber();
        if (to >= fromBlock) {
          for (const log of await client.getLogs({ address: module, fromBlock, toBlock: to })) sales.push({ block: i, eth, log });
          fromBlock = to + 1n;
        }
      }
    }
    if (engineProcess) {
      // the engine that survived settles whatever it took over before the books close
      const deadline = Date.now() + 10_000;
      while (treasuryId && (await gw.ctx.stores.protectionClaims.get(treasuryId)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      engineProcess.kill("SIGTERM");
    }
    if (module) {
      const to = await client.getBlockNumber();
      if (to >= fromBlock)
        for (const log of await client.getLogs({ address: module, fromBlock, toBlock: to }))
          sales.push({ block: pricePath.eth.length - 1, eth: pricePath.eth.at(-1)!, log });
    }

    // the books: each sale against the oracle at its block, its gas, the store's record of the acts
    const events = sales.flatMap((s) =>
      parseEventLogs({ abi: PROTECTION_MODULE_ABI, logs: [s.log as never], eventName: "Deleveraged" }).map((e) => ({ ...s, e })),
    );
    if (events.length > 0) firstAct = events[0]!.block;
    let gasWei = 0n;
    for (const hash of new Set(events.map((x) => x.log.transactionHash!))) {
      const r = await client.getTransactionReceipt({ hash: hash as Hex });
      gasWei += r.gasUsed * r.effectiveGasPrice;
    }
    const slippage = events.reduce((sum, x) => sum + (Number(x.e.args.collateralSold) / 1e18) * x.eth - Number(x.e.args.usdcReceived) / 1e6, 0);
    const premium = events.reduce((sum, x) => sum + Number(x.e.args.flashPremium) / 1e6, 0);
    const actions = apiKey ? ((await get(url, "/api/v1/delegation", apiKey)).protection_actions as { status: string }[]) : [];

    const finalEth = pricePath.eth.at(-1)!;
    const equity = async (who: `0x${string}`) => {
      const a = await account(who);
      const [idleUsdc, idleWeth] = await Promise.all(
        [m.usdc, m.weth].map((t) => client.readContract({ address: t, abi: ERC20_ABI, functionName: "balanceOf", args: [who] })),
      );
      return usd(a.collateral) - usd(a.debt) + Number(idleUsdc!) / 1e6 + (Number(idleWeth!) / 1e18) * finalEth;
    };
    const [pe, be, pa] = await Promise.all([equity(protectedSafe.safe), equity(twin.safe), account(protectedSafe.safe)]);
    const ethUsd = finalEth;
    return {
      scenario: pricePath.name,
      description: pricePath.description,
      start_ltv_pct: o.startLtvPct,
      blocks: pricePath.eth.length,
      engines: o.crash ? "1 process, killed (SIGKILL) in its first act and restarted" : engines === 0 ? "none" : `${engines} in one process`,
      protected: {
        lowest_health: floor4(p.lowest),
        liquidations: p.liquidations,
        liquidation_bonus_lost_usd: round(usd(p.bonusLost), 2),
        equity_end_usd: round(pe, 2),
        deleverages: events.length,
        recorded_actions: actions.filter((a) => a.status === "executed").length,
        triggers: actions.length,
        blocks_trigger_to_act: firstUnder !== null && firstAct !== null ? firstAct - firstUnder : null,
        max_blocks_under_trigger: maxUnder,
        gas_usd: round((Number(gasWei) / 1e18) * ethUsd, 4),
        slippage_vs_oracle_usd: round(slippage, 2),
        flash_premium_usd: round(premium, 2),
        ltv_end_pct: pa.collateral === 0n ? 0 : round((Number(pa.debt) / Number(pa.collateral)) * 100, 2),
      },
      baseline: {
        lowest_health: floor4(b.lowest),
        liquidations: b.liquidations,
        liquidation_bonus_lost_usd: round(usd(b.bonusLost), 2),
        equity_end_usd: round(be, 2),
      },
      equity_kept_vs_baseline_usd: round(pe - be, 2),
      ...(inline.length > 0 ? { engine_answers_under_trigger: answers } : {}),
      ...(crash ? { crash } : {}),
      series,
    };
  } finally {
    for (const c of children) c.kill("SIGKILL");
    await gw?.close();
    await fork.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
/** a health factor to 4 decimals, rounded down: a position under 1 never reads as 1 */
const floor4 = (x: number) => Math.floor(x * 10_000) / 10_000;

/** a Safe with 10 WETH supplied at the start price and `debt` USDC borrowed and spent */
async function borrower(fork: BaseForkNode, debt: bigint) {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(COLLATERAL_WETH);
  await operator.supplyAndBorrow(COLLATERAL_WETH, debt);
  await operator.execSafe([
    { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: ["0x000000000000000000000000000000000000dEaD", debt] }) },
  ]);
  return { operator, safe };
}

async function post(url: string, route: string, body: unknown, key?: string) {
  const res = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, any>;
  if (!res.ok) throw new Error(`${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function get(url: string, route: string, key: string) {
  const res = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${key}` } });
  return (await res.json()) as Record<string, any>;
}
