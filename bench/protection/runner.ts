/**
 * The protection scenario runner: a managed Safe (WETH collateral, USDC
 * borrowed and spent, delegation active) and its unprotected twin (the same
 * position, no module) live through a price path on the offline Base fork,
 * one block at a time: the ETH and BTC feeds move, an arbitrageur trades the
 * Uniswap pools to the same prices, the protection engine(s) take their pass,
 * and a liquidator calls Aave's own liquidationCall on any position whose
 * health factor is under 1 (liquidator.ts). Aave is the judge: a liquidation
 * is Aave's, not the runner's, verdict.
 *
 * Engines run in this process (one or several ProtectionEngines on the
 * gateway's store, each block's passes at once) or as their own process
 * (engine-process.ts), which the runner can kill -9 in the middle of an act
 * and start again. The books are closed on the module's events
 * (deleverages.ts) and the chain's final state (fork-client.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { createTestClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { arbitrageTo } from "../../fixtures/arbitrageur";
import { startBaseFork } from "../../fixtures/base-fork";
import { loadConfig } from "../../gateway/src/config";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { startGateway, type RunningGateway } from "../../gateway/src/server";
import type { DatabaseLocation } from "../../gateway/src/store/db";
import { deleverageBooks, ModuleLogs } from "./deleverages";
import { startEngineProcess } from "./engine-process";
import { accountOf, equityOf, forkClient, health, usd } from "./fork-client";
import { newTally, startLiquidator } from "./liquidator";
import { pathNamed } from "./paths";
import { borrower, delegate, get } from "./safes";
import type { ScenarioOptions, ScenarioResult } from "./scenario";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

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
    const client = forkClient(fork.rpcUrl);
    const anvil = createTestClient({ mode: "anvil", chain: base, transport: http(fork.rpcUrl) });

    const debt = (BigInt(o.startLtvPct) * 30_000n * 10n ** 6n) / 100n;
    const protectedSafe = await borrower(fork, debt);
    const twin = await borrower(fork, debt);
    const engines = o.engines ?? 1;
    const delegated = engines > 0 || o.crash ? await delegate(url, protectedSafe, automation.address, trigger) : undefined;
    const treasuryId = delegated?.treasuryId;

    const inline = o.crash ? [] : Array.from({ length: engines }, () => new ProtectionEngine(gw!.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey }));
    const engineOptions = { database, dataDir, rpcUrl: fork.rpcUrl, automationKey, children };
    let engineProcess = o.crash ? await startEngineProcess(engineOptions) : undefined;
    let killed = false;
    let crash: ScenarioResult["crash"];

    const liquidate = await startLiquidator(fork, client);
    const p = newTally();
    const b = newTally();

    const series: ScenarioResult["series"] = [];
    const moduleLogs = new ModuleLogs(client, delegated?.module, (await client.getBlockNumber()) + 1n);
    let firstUnder: number | null = null;
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
      const [ps, bs] = await Promise.all([accountOf(client, protectedSafe.safe), accountOf(client, twin.safe)]);
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
          engineProcess = await startEngineProcess(engineOptions);
          await anvil.setAutomine(true);
          await anvil.mine({ blocks: 1 });
        }
        // a block's time (2 s on Base, 120 ms here) for the process engine to take its pass
        await new Promise((r) => setTimeout(r, 120));
      }
      await liquidate(protectedSafe.safe, p);
      await liquidate(twin.safe, b);
      await moduleLogs.collect(i, eth);
    }
    if (engineProcess) {
      // the engine that survived settles whatever it took over before the books close
      const deadline = Date.now() + 10_000;
      while (treasuryId && (await gw.ctx.stores.protectionClaims.get(treasuryId)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      engineProcess.kill("SIGTERM");
    }
    await moduleLogs.collect(pricePath.eth.length - 1, pricePath.eth.at(-1)!);

    // the books: each sale against the oracle at its block, its gas, the store's record of the acts
    const books = await deleverageBooks(client, moduleLogs.logs);
    const actions = delegated ? ((await get(url, "/api/v1/delegation", delegated.apiKey)).protection_actions as { status: string }[]) : [];

    const finalEth = pricePath.eth.at(-1)!;
    const [pe, be, pa] = await Promise.all([
      equityOf(client, protectedSafe.safe, finalEth),
      equityOf(client, twin.safe, finalEth),
      accountOf(client, protectedSafe.safe),
    ]);
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
        bad_debt_usd: round(Number(p.badDebt) / 1e6, 2),
        equity_end_usd: round(pe, 2),
        deleverages: books.deleverages,
        recorded_actions: actions.filter((a) => a.status === "executed").length,
        triggers: actions.length,
        blocks_trigger_to_act: firstUnder !== null && books.firstBlock !== null ? books.firstBlock - firstUnder : null,
        max_blocks_under_trigger: maxUnder,
        gas_usd: round((Number(books.gasWei) / 1e18) * ethUsd, 4),
        slippage_vs_oracle_usd: round(books.slippageUsd, 2),
        flash_premium_usd: round(books.premiumUsd, 2),
        ltv_end_pct: pa.collateral === 0n ? 0 : round((Number(pa.debt) / Number(pa.collateral)) * 100, 2),
      },
      baseline: {
        lowest_health: floor4(b.lowest),
        liquidations: b.liquidations,
        liquidation_bonus_lost_usd: round(usd(b.bonusLost), 2),
        bad_debt_usd: round(Number(b.badDebt) / 1e6, 2),
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
