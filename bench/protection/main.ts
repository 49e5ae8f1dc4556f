/**
 * npm run scenarios [-- --quick] [-- --only fast-drop] [-- --picture]: every protection
 * scenario on the offline Base fork (bench/protection/runner.ts), a table of
 * what happened to the protected Safe and to its unprotected twin, the whole
 * results in bench/results/scenarios-latest.json and the fast drop's picture
 * in docs/images/protection-fast-drop.svg (--picture: only draw it again from the saved results).
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { healthPicture } from "./picture";
import { runScenario } from "./runner";
import type { ScenarioOptions, ScenarioResult } from "./scenario";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const args = process.argv.slice(2);
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
const quick = args.includes("--quick");

/** every scenario the issue of proof asks for: each path at the ceiling (60%) and at 50%, then the fast drop with three engines and with a crash */
export function plan(quickRun: boolean): ScenarioOptions[] {
  const paths = quickRun ? ["fast-drop", "wick"] : ["slide", "fast-drop", "wick", "random-7", "random-42"];
  const runs: ScenarioOptions[] = [];
  for (const p of paths) for (const ltv of [60, 50]) runs.push({ path: p, startLtvPct: ltv, engines: 1 });
  runs.push({ path: "fast-drop", startLtvPct: 60, engines: 3 });
  runs.push({ path: "fast-drop", startLtvPct: 60, crash: true });
  return runs;
}

if (args.includes("--picture")) {
  const saved = JSON.parse(fs.readFileSync(path.join(ROOT, "bench/results/scenarios-latest.json"), "utf8")) as ScenarioResult[];
  fs.writeFileSync(path.join(ROOT, "docs/images/protection-fast-drop.svg"), healthPicture(saved.find((r) => r.series.length > 0)!));
  process.exit(0);
}

const results: ScenarioResult[] = [];
for (const run of plan(quick)) {
  if (only && run.path !== only) continue;
  const t = Date.now();
  const r = await runScenario(run);
  results.push(r);
  const pr = r.protected;
  process.stdout.write(
    `${r.scenario.padEnd(10)} LTV ${r.start_ltv_pct}% ${r.engines.padEnd(56)} protected: lowest HF ${pr.lowest_health.toFixed(4)}, liquidations ${pr.liquidations}, deleverages ${pr.deleverages} (recorded ${pr.recorded_actions}), trigger->act ${pr.blocks_trigger_to_act ?? "-"} blocks, under trigger at most ${pr.max_blocks_under_trigger} blocks, gas ${pr.gas_usd} USD, slippage ${pr.slippage_vs_oracle_usd} USD, premium ${pr.flash_premium_usd} USD | unprotected: lowest HF ${r.baseline.lowest_health.toFixed(4)}, liquidations ${r.baseline.liquidations}, bonus lost ${r.baseline.liquidation_bonus_lost_usd} USD, bad debt ${r.baseline.bad_debt_usd} USD | equity kept ${r.equity_kept_vs_baseline_usd} USD (${((Date.now() - t) / 1000).toFixed(1)} s)\n`,
  );
}
fs.mkdirSync(path.join(ROOT, "bench/results"), { recursive: true });
const picture = results.find((r) => r.scenario === "fast-drop" && r.start_ltv_pct === 60 && r.engines.startsWith("1 in"));
// the block-by-block series only for the pictured run (the rest would make the file large)
fs.writeFileSync(
  path.join(ROOT, "bench/results/scenarios-latest.json"),
  `${JSON.stringify(
    results.map((r) => (r === picture ? r : { ...r, series: [] })),
    null,
    1,
  )}\n`,
);
if (picture) fs.writeFileSync(path.join(ROOT, "docs/images/protection-fast-drop.svg"), healthPicture(picture));
process.exit(0);
