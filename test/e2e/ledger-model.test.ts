/**
 * One action, one effect: the ledger an unproven managed registration keeps
 * (`own_sandbox_ledger`) models what the local fork does for a proven
 * registration of the same request. A deposit supplies USDC (its allocation
 * buys nothing); a convert swaps USDC for the target and supplies it; borrow,
 * repay, withdraw, sell and exit move the same balances. Both treasuries run
 * on one real gateway against the fork; their positions (collateral per asset,
 * supplied and idle USDC, debt) are compared within the swap's price tolerance
 * (the fork supplies 1% under the pool's quote, the ledger fills at the
 * sandbox's price).
 */
import fc from "fast-check";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DECLARED } from "@treasury/core/actions";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { call, startTestGateway, type JsonResponse, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { authed, registerProven, registerTreasury, sandboxTenant } from "../helpers/treasury";

let fork: BaseForkNode;
let gw: TestGateway;
let doc: ResponseValidator;

beforeAll(async () => {
  fork = await startBaseFork();
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, FEE_RECIPIENT: devAccount(5).address });
  doc = new ResponseValidator((await call(gw.url, "GET", "/openapi.json")).body);
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await fork?.stop();
});

/** one request, as the declarations route it */
interface Step {
  action: (typeof DECLARED)[number]["name"];
  body: Record<string, unknown>;
}
const pathOf = (action: Step["action"]) => DECLARED.find((d) => d.name === action)!.route.path;

/** a managed treasury for a brand-new wallet: on its own ledger (no proof), or on the fork (proven) */
async function managed(proven: boolean) {
  const account = privateKeyToAccount(generatePrivateKey());
  const t = proven
    ? await registerProven(gw.url, account, { execution_mode: "managed" })
    : await registerTreasury(gw.url, { wallet_address: account.address, execution_mode: "managed" });
  const api = authed(gw.url, t.key);
  const checked = async (method: "GET" | "POST", path: string, body?: unknown): Promise<JsonResponse> => {
    const r = method === "GET" ? await api.get(path) : await api.post(path, body);
    doc.check(method, path, r.status, r.body);
    return r;
  };
  return {
    act: (s: Step) => checked("POST", pathOf(s.action), s.body),
    /** collateral per asset, supplied and idle USDC, debt */
    position: async () => {
      const r = await checked("GET", "/api/v1/treasury");
      expect(r.status, r.text).toBe(200);
      const h = r.body.holdings as { btc: number; eth: number; usdc: number; usdc_supplied: number };
      return { btc: h.btc, eth: h.eth, usdc_supplied: h.usdc_supplied, usdc: h.usdc, debt: r.body.borrowed_usd as number };
    },
  };
}

/** within the swap's tolerance: 1% under the quote, plus the pool's fee and price impact, and a cent of rounding */
function near(ledger: number, fork: number, unit: number): boolean {
  return Math.abs(ledger - fork) <= Math.max(Math.abs(ledger), Math.abs(fork)) * 0.015 + unit;
}

/** play the same requests on both; each answers alike (both done, or both refused with the same code), and the positions agree */
async function playBoth(steps: Step[], allDone = false, done = new Set<string>()) {
  const [ledger, onFork] = await Promise.all([managed(false), managed(true)]);
  for (const s of steps) {
    const [l, f] = [await ledger.act(s), await onFork.act(s)];
    const what = `${s.action} ${JSON.stringify(s.body)}: ledger ${l.status} ${l.text}; fork ${f.status} ${f.text}`;
    expect(l.status, what).toBe(f.status);
    if (allDone) expect(l.status, what).toBe(200);
    if (l.status !== 200) expect(l.body.error, what).toBe(f.body.error);
    else {
      expect(l.body.chain_execution, what).toMatchObject({ ledger: "own_sandbox_ledger" });
      done.add(s.action);
    }
  }
  const [a, b] = [await ledger.position(), await onFork.position()];
  const what = `after ${JSON.stringify(steps)}: ledger ${JSON.stringify(a)}; fork ${JSON.stringify(b)}`;
  expect(near(a.btc, b.btc, 1e-8), what).toBe(true);
  expect(near(a.eth, b.eth, 1e-8), what).toBe(true);
  expect(near(a.usdc_supplied, b.usdc_supplied, 0.01), what).toBe(true);
  expect(near(a.usdc, b.usdc, 0.01), what).toBe(true);
  expect(near(a.debt, b.debt, 0.01), what).toBe(true);
  return { ledger: a, fork: b };
}

describe("an unproven managed registration's ledger does what the fork does", () => {
  it("a deposit then a convert: the deposit supplies USDC (its allocation buys nothing), the convert buys ETH at its own fee", async () => {
    const { ledger, fork: onFork } = await playBoth([
      { action: "deposit", body: { amount_usdc: 20_000, allocation: { btc: 70, eth: 30 } } },
      { action: "convert", body: { amount_usdc: 10_000, target: "eth" } },
    ]);
    // 2% of each: 19,600 supplied; 9,800 of ETH at 3,000, supplied 1% under that quote as on the chain
    expect(ledger).toMatchObject({ btc: 0, usdc_supplied: 19_600, usdc: 0, debt: 0 });
    expect(ledger.eth).toBeCloseTo((9_800 / 3_000) * 0.99, 6);
    expect(onFork.usdc_supplied).toBeCloseTo(19_600, 0);
  });

  it("an exit's record states the debt it repaid", async () => {
    const ledger = await managed(false);
    expect((await ledger.act({ action: "deposit", body: { amount_usdc: 10_000 } })).status).toBe(200);
    expect((await ledger.act({ action: "borrow", body: { amount_usdc: 2_000 } })).status).toBe(200);
    const exit = await ledger.act({ action: "exit", body: {} });
    expect(exit.status, exit.text).toBe(200);
    expect(exit.body).toMatchObject({ amount_usdc: 2_000, repaid_usdc: 2_000, fee_usdc: 0 });
    expect(await ledger.position()).toMatchObject({ btc: 0, eth: 0, usdc_supplied: 0, debt: 0, usdc: 9_800 + 1_960 - 2_000 });
    // a sandbox key's demo treasury (24,000 borrowed) the same: its exit states the 24,000 it repaid
    const demo = await sandboxTenant(gw.url);
    const demoExit = await authed(gw.url, demo.key).post("/api/v1/exit", {});
    expect(demoExit.status, demoExit.text).toBe(200);
    expect(demoExit.body).toMatchObject({ amount_usdc: 24_000, repaid_usdc: 24_000, fee_usdc: 0 });
  });

  it("every declared action in one sequence, each done on both", async () => {
    const steps: Step[] = [
      { action: "deposit", body: { amount_usdc: 10_000 } },
      { action: "convert", body: { amount_usdc: 4_000, target: "eth" } },
      { action: "borrow", body: { amount_usdc: 3_000 } },
      { action: "repay", body: { amount_usdc: 1_000 } },
      { action: "withdraw", body: { asset: "USDC", amount: 500 } },
      { action: "sell", body: { asset: "ETH", amount: 0.1 } },
      { action: "exit", body: { sell: true } },
    ];
    expect(new Set(steps.map((s) => s.action))).toEqual(new Set(DECLARED.map((d) => d.name)));
    const { ledger } = await playBoth(steps, true);
    expect(ledger).toMatchObject({ btc: 0, eth: 0, usdc_supplied: 0, debt: 0 });
  });

  // every declared action, in random sequences after a first deposit, amounts well inside the rail on both
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ action: fc.constant("deposit" as const), body: fc.record({ amount_usdc: fc.integer({ min: 100, max: 20_000 }) }) }),
    fc.record({
      action: fc.constant("convert" as const),
      body: fc.record({ amount_usdc: fc.integer({ min: 100, max: 5_000 }), target: fc.constantFrom("btc", "eth") }),
    }),
    fc.record({ action: fc.constant("borrow" as const), body: fc.record({ amount_usdc: fc.integer({ min: 50, max: 2_000 }) }) }),
    fc.record({ action: fc.constant("repay" as const), body: fc.record({ amount_usdc: fc.integer({ min: 10, max: 3_000 }) }) }),
    fc.record({
      action: fc.constant("withdraw" as const),
      body: fc.oneof(
        fc.record({ asset: fc.constant("USDC"), amount: fc.integer({ min: 10, max: 500 }) }),
        fc.record({ asset: fc.constant("ETH"), amount: fc.constantFrom(0.01, 0.05) }),
      ),
    }),
    fc.record({ action: fc.constant("sell" as const), body: fc.record({ asset: fc.constantFrom("ETH", "BTC"), amount: fc.constantFrom(0.001, 0.01) }) }),
    fc.record({ action: fc.constant("exit" as const), body: fc.constantFrom({}, { sell: true }) }),
  );
  it("random sequences of every declared action end in the same position on the ledger and on the fork", async () => {
    const done = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2_000, max: 20_000 }), fc.array(step, { minLength: 1, maxLength: 3 }), async (first, rest) => {
        const steps: Step[] = [{ action: "deposit", body: { amount_usdc: first } }, ...rest];
        await playBoth(steps, false, done);
      }),
      { numRuns: 8 },
    );
    // the sequences did more than deposit: actions past the first were done on both, not only refused alike
    expect(done.size).toBeGreaterThan(2);
  }, 300_000);
});
