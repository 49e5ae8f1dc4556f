/**
 * The signer agent decides on decoded calldata alone (issue 10, finding 7):
 * labels from the gateway or the caller change nothing; an envelope's totals
 * are bounded against the intent; the daily cap counts what moves, whatever
 * the step is called, and is reserved atomically; amounts are exact integers.
 * Envelopes come from the gateway's own planner and are then tampered with;
 * signatures are preflighted on the offline Base fork.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeFunctionData, encodeFunctionData, getAddress, type Hex } from "viem";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "@treasury/core/contracts/uniswap";
import { withQuotes } from "@treasury/core/actions/exit-plan";
import type { ExitSnapshot } from "@treasury/core/actions/exit-sizing";
import { exitSteps } from "@treasury/core/actions/exit-steps";
import { ALL, stepContext } from "@treasury/core/actions/steps";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusalOf } from "../helpers/refusal";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { devAccount } from "../../fixtures/base-sepolia";
import { planSteps } from "@treasury/core/chain/envelope-plan";
import { parseUsdc } from "@treasury/core/domain/money";
import { AuditLog } from "../../signer-agent/src/audit-log";
import { RefusedError, SignerAgent } from "../../signer-agent/src/agent";
import { checkIntent, defaultPolicy, type Policy } from "../../signer-agent/src/policy";
import { feeOf } from "@treasury/core/actions";

const FEE = devAccount(4).address;
const m = AAVE_MARKETS.base;
const self = privateKeyToAccount(generatePrivateKey()).address;
const policy = defaultPolicy([FEE]);

/** an envelope as the gateway plans it: steps with kinds, calldata, chain id */
function envelope(action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth") {
  const amountMicro = parseUsdc(usdc);
  const steps = planSteps({ action, chain: "base", wallet: self, amountMicro, feeMicro: feeOf(action, amountMicro).feeMicro, feeRecipient: FEE, target });
  return { action, steps: steps.map((s) => ({ kind: s.kind as string, unsigned_transaction: { chain_id: 8453, to: s.to, data: s.data, value: "0" } })) };
}
const transfer = (to: `0x${string}`, micro: bigint) => ({
  kind: "fee_transfer",
  unsigned_transaction: { chain_id: 8453, to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: [to, micro] }), value: "0" },
});
/** the signer's own floor for each swap of an envelope: here its bound exactly (the agent asks the pool: test/e2e) */
const floorsOf = (e: { steps: { unsigned_transaction: { to: `0x${string}`; data: Hex } }[] }, over = 0n) =>
  e.steps
    .filter((s) => getAddress(s.unsigned_transaction.to) === getAddress(swapRouter02(8453)))
    .map(
      (s) =>
        decodeFunctionData({ abi: SWAP_ROUTER_02_ABI, data: s.unsigned_transaction.data }).args[0] as {
          tokenIn: `0x${string}`;
          tokenOut: `0x${string}`;
          amountIn: bigint;
          amountOutMinimum: bigint;
        },
    )
    .map((p) => ({ token: getAddress(p.tokenIn), tokenOut: getAddress(p.tokenOut), amountIn: p.amountIn, floor: p.amountOutMinimum + over }));
const intent = (action: "deposit" | "borrow" | "repay" | "convert", usdc: number, target?: "btc" | "eth") => ({
  action,
  amountMicro: parseUsdc(usdc),
  target,
  swapFloors: floorsOf(envelope(action, usdc, target)),
});

describe("the envelope is checked against the intent, from the calldata", () => {
  it("accepts every action as the gateway plans it, whatever the steps are labelled", () => {
    for (const [action, usdc, target] of [
      ["deposit", 500],
      ["borrow", 1000],
      ["repay", 250],
      ["convert", 3000, "eth"],
      ["convert", 3000, "btc"],
    ] as const) {
      const e = envelope(action, usdc, target);
      expect(() => checkIntent(intent(action, usdc, target), e, self, policy)).not.toThrow();
      // relabelled or reordered steps are the same calls
      const relabelled = { ...e, steps: [...e.steps].reverse().map((s) => ({ ...s, kind: "approval" })) };
      expect(() => checkIntent(intent(action, usdc, target), relabelled, self, policy)).not.toThrow();
    }
  });

  it("refuses a 100% fee, a fee one micro-USDC above 2%, 40 fee steps, and a fee on a repayment", () => {
    const e = envelope("deposit", 500);
    // the fee step labelled as an approval, as a tampering gateway would
    const withFee = (micro: bigint) => ({ ...e, steps: [{ ...transfer(FEE, micro), kind: "approval" }, ...e.steps.slice(1)] });
    expect(refusalOf(() => checkIntent(intent("deposit", 500), withFee(500_000_000n), self, policy))).toMatch(/above the 2% rate/);
    expect(refusalOf(() => checkIntent(intent("deposit", 500), withFee(10_000_001n), self, policy))).toMatch(/above the 2% rate/);
    const forty = { ...e, steps: [...e.steps, ...Array.from({ length: 40 }, () => ({ ...transfer(FEE, 1_000_000n), kind: "approval" }))] };
    expect(refusalOf(() => checkIntent(intent("deposit", 500), forty, self, policy))).toMatch(/fees/);
    const repay = envelope("repay", 100);
    expect(refusalOf(() => checkIntent(intent("repay", 100), { ...repay, steps: [...repay.steps, transfer(FEE, 1n)] }, self, policy))).toMatch(/free/);
  });

  it("refuses 6x the requested borrow, a second supply labelled as an approval, and amounts that do not add up", () => {
    // five more borrows of the requested amount, labelled as approvals: 6x the borrow
    const one = envelope("borrow", 1000);
    const borrowStep = one.steps.find((s) => s.kind === "pool_call")!;
    const six = { ...one, steps: [...one.steps, ...Array.from({ length: 5 }, () => ({ ...borrowStep, kind: "approval" }))] };
    expect(refusalOf(() => checkIntent(intent("borrow", 1000), six, self, policy))).toMatch(/exactly one USDC borrow/);
    const dep = envelope("deposit", 100);
    const supply = dep.steps.find((s) => s.kind === "pool_call")!;
    expect(refusalOf(() => checkIntent(intent("deposit", 100), { ...dep, steps: [...dep.steps, { ...supply, kind: "approval" }] }, self, policy))).toMatch(
      /exactly one USDC supply/,
    );
    // a deposit of 100 that supplies what a deposit of 1,000 would
    const big = envelope("deposit", 1000);
    expect(refusalOf(() => checkIntent(intent("deposit", 100), big, self, policy))).toMatch(/above the 2% rate|moves/);
  });
});

describe("a swap bounded under the signer's own quote, and the way out, from the calldata", () => {
  it("a convert whose swap accepts less than the signer's own quote less its slippage is refused, and one it has no quote for", () => {
    const e = envelope("convert", 3000, "eth");
    const base = { action: "convert" as const, amountMicro: parseUsdc(3000), target: "eth" as const };
    expect(() => checkIntent({ ...base, swapFloors: floorsOf(e) }, e, self, policy)).not.toThrow();
    expect(refusalOf(() => checkIntent({ ...base, swapFloors: floorsOf(e, 1n) }, e, self, policy))).toMatch(/the convert's swap accepts as little as/);
    expect(refusalOf(() => checkIntent(base, e, self, policy))).toMatch(/no quote of its own/);
  });

  it("a repayment from the supplied USDC (repayWithATokens) where one from the wallet was asked is refused", () => {
    const e = envelope("repay", 100);
    const swapped = {
      ...e,
      steps: e.steps.map((s) => {
        if (getAddress(s.unsigned_transaction.to) !== getAddress(m.pool)) return s;
        return {
          ...s,
          unsigned_transaction: {
            ...s.unsigned_transaction,
            data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "repayWithATokens", args: [m.usdc, 100_000_000n, 2n] }),
          },
        };
      }),
    };
    expect(refusalOf(() => checkIntent(intent("repay", 100), swapped, self, policy))).toMatch(/exactly one USDC repayment to the Pool \(from the wallet\)/);
  });

  const ETH = 10n ** 18n;
  const snap = (over: Partial<ExitSnapshot> = {}): ExitSnapshot => ({
    debt: 18_000_000_000n,
    walletUsdc: 0n,
    supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 0n },
    price: { USDC: 1_000_000n, ETH: 3_000_000_000n, BTC: 60_000_000_000n },
    lt: { USDC: 7_800n, ETH: 8_250n, BTC: 7_800n },
    ...over,
  });
  const quote = async (symbol: "ETH" | "BTC", units: bigint) => (symbol === "ETH" ? (units * 2_985_000_000n) / ETH : (units * 59_700_000_000n) / 10n ** 8n);
  const exitEnvelope = async (s: ExitSnapshot, sell = false) => ({
    action: "exit",
    snapshot: s,
    steps: exitSteps(stepContext("base", self), await withQuotes(s, sell, quote)).map((x) => ({
      kind: x.kind as string,
      unsigned_transaction: { chain_id: 8453, to: x.to, data: x.data, value: "0" },
    })),
  });
  /** what the signer reads of the wallet on its own RPC: the snapshot's debt and supplies */
  const positionOf = (s: ExitSnapshot) => ({
    debt: s.debt,
    supplied: { [getAddress(m.usdc)]: s.supplied.USDC, [getAddress(m.weth)]: s.supplied.ETH, [getAddress(m.btc)]: s.supplied.BTC } as Record<
      `0x${string}`,
      bigint
    >,
  });
  const exitIntent = (e: Awaited<ReturnType<typeof exitEnvelope>>, over: object = {}) => ({
    action: "exit" as const,
    amountMicro: 0n,
    swapFloors: floorsOf(e),
    position: positionOf(e.snapshot),
    ...over,
  });
  const retarget = (e: Awaited<ReturnType<typeof exitEnvelope>>, i: number, to: `0x${string}`) => ({
    ...e,
    steps: e.steps.map((st, j) => (j !== i ? st : { ...st, unsigned_transaction: { ...st.unsigned_transaction, to } })),
  });
  const fnOf = (st: { unsigned_transaction: { data: Hex | string } }) => {
    try {
      return decodeFunctionData({ abi: [...AAVE_POOL_ABI, ...ERC20_ABI, ...SWAP_ROUTER_02_ABI], data: st.unsigned_transaction.data as Hex });
    } catch {
      return { functionName: "?", args: [] as readonly unknown[] };
    }
  };

  it("an exit as planned is signed: from collateral in rounds, from the supplied USDC alone, with a sale", async () => {
    for (const [s, sell] of [
      [snap(), false],
      [snap({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } }), false],
      [snap({ debt: 1_000_000_000n }), true],
    ] as const) {
      const e = await exitEnvelope(s, sell);
      expect(() => checkIntent(exitIntent(e, { sell }), e, self, policy)).not.toThrow();
    }
  });

  it("an exit that does not close the debt, withdraws before its last repayment without selling, or sells when no sale was asked is refused", async () => {
    const e = await exitEnvelope(snap());
    const fns = e.steps.map((st) => fnOf(st));
    const closing = fns.map((f) => f.functionName).lastIndexOf("repay");
    // no closing repayment: the wallet's collateral out with the debt left
    const open = { ...e, steps: e.steps.filter((_st, i) => i !== closing && i !== closing - 1) };
    expect(refusalOf(() => checkIntent(exitIntent(open), open, self, policy))).toMatch(/does not repay all of the debt|last repayment of an exit must be all/);
    // a round's withdrawal with its swap taken out: collateral out before the debt is repaid, unsold
    const firstSwap = fns.findIndex((f) => f.functionName === "exactInputSingle");
    const unsold = { ...e, steps: e.steps.filter((_st, i) => i !== firstSwap && i !== firstSwap - 1) };
    expect(refusalOf(() => checkIntent(exitIntent(unsold), unsold, self, policy))).toMatch(/must be sold at once|sell a withdrawal|needs/);
    // after the last repayment, a bounded withdrawal (not everything) or a sale no one asked for
    const withSale = await exitEnvelope(snap({ debt: 1_000_000_000n }), true);
    expect(refusalOf(() => checkIntent(exitIntent(withSale, { sell: false }), withSale, self, policy))).toMatch(/no sale was asked/);
    const partial = {
      ...e,
      steps: e.steps.map((st, i) => {
        const f = fns[i]!;
        if (f.functionName !== "withdraw" || i < closing || f.args[1] !== ALL) return st;
        return {
          ...st,
          unsigned_transaction: {
            ...st.unsigned_transaction,
            data: encodeFunctionData({ abi: AAVE_POOL_ABI, functionName: "withdraw", args: [f.args[0] as `0x${string}`, 1n, self] }),
          },
        };
      }),
    };
    expect(refusalOf(() => checkIntent(exitIntent(partial), partial, self, policy))).toMatch(/only withdrawals of everything/);
    // the wallet has no debt: an exit without a repayment is what it needs; with debt the signer reads, refused
    const none = await exitEnvelope(snap({ debt: 0n }));
    expect(() => checkIntent(exitIntent(none), none, self, policy)).not.toThrow();
    expect(refusalOf(() => checkIntent(exitIntent(none, { position: positionOf(snap()) }), none, self, policy))).toMatch(/does not repay all of the debt/);
  });

  it("an exit whose calls go elsewhere (a swap or the closing repayment sent to WETH, whose fallback takes anything), closes with supplied USDC that does not cover the debt, or sells a max withdrawal for a wei is refused", async () => {
    const e = await exitEnvelope(snap());
    const fns = e.steps.map((st) => fnOf(st));
    const closing = fns.map((f) => f.functionName).lastIndexOf("repay");
    const firstSwap = fns.findIndex((f) => f.functionName === "exactInputSingle");
    // WETH9's fallback is deposit(): any calldata succeeds there, so a retargeted step "passes" preflight and does nothing
    expect(refusalOf(() => checkIntent(exitIntent(e), retarget(e, firstSwap, getAddress(m.weth)), self, policy))).toMatch(/not to the market's router/);
    expect(refusalOf(() => checkIntent(exitIntent(e), retarget(e, closing, getAddress(m.weth)), self, policy))).toMatch(/not to the market's Pool/);
    // the supplied USDC covers the debt when planned; the signer reads less of it than the debt now: repayWithATokens max would leave debt
    const covered = await exitEnvelope(snap({ supplied: { USDC: 20_000_000_000n, ETH: ETH, BTC: 0n } }));
    const short = {
      debt: 18_000_000_000n,
      supplied: { [getAddress(m.usdc)]: 17_000_000_000n, [getAddress(m.weth)]: ETH, [getAddress(m.btc)]: 0n } as Record<`0x${string}`, bigint>,
    };
    expect(refusalOf(() => checkIntent(exitIntent(covered, { position: short }), covered, self, policy))).toMatch(/does not cover the debt/);
    // a first round that withdraws all of a small BTC supply (max) before the last repayment, and sells one unit of it
    const small = await exitEnvelope(snap({ supplied: { USDC: 0n, ETH: 10n * ETH, BTC: 100_000n }, debt: 1_000_000_000n }));
    const sf = small.steps.map((st) => fnOf(st));
    const w = sf.findIndex((f) => f.functionName === "withdraw");
    expect(sf[w]!.args[1]).toBe(ALL);
    const sw = sf.findIndex((f) => f.functionName === "exactInputSingle");
    const p = sf[sw]!.args[0] as {
      tokenIn: `0x${string}`;
      tokenOut: `0x${string}`;
      fee: number;
      recipient: `0x${string}`;
      amountIn: bigint;
      amountOutMinimum: bigint;
      sqrtPriceLimitX96: bigint;
    };
    const wei = {
      ...small,
      steps: small.steps.map((st, i) =>
        i !== sw
          ? st
          : {
              ...st,
              unsigned_transaction: {
                ...st.unsigned_transaction,
                data: encodeFunctionData({ abi: SWAP_ROUTER_02_ABI, functionName: "exactInputSingle", args: [{ ...p, amountIn: 1n, amountOutMinimum: 0n }] }),
              },
            },
      ),
    };
    expect(() => checkIntent(exitIntent(small), small, self, policy)).not.toThrow();
    expect(refusalOf(() => checkIntent({ ...exitIntent(small), swapFloors: floorsOf(wei) }, wei, self, policy))).toMatch(
      /must be sold at once for the same units/,
    );
  });
});

describe("the daily cap counts what the calldata moves, reserved atomically", () => {
  let fork: BaseForkNode;
  beforeAll(async () => {
    fork = await startBaseFork();
  }, 60_000);
  afterAll(() => fork?.stop());

  async function agentWithCap(capUsdc: number) {
    const privateKey = generatePrivateKey();
    const account = privateKeyToAccount(privateKey);
    await fork.fund(account.address, 1_000_000_000n);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signer-cap-"));
    const audit = new AuditLog(path.join(dir, "audit.jsonl"));
    const p: Policy = { ...policy, daily_cap_usdc: capUsdc };
    return { agent: new SignerAgent({ privateKey, gatewayUrl: "http://127.0.0.1:9", rpcUrl: fork.rpcUrl, policy: p, audit }), audit };
  }
  const step = (i: number, micro: bigint) => ({
    tx_id: `tx_${i}`,
    seq: i,
    kind: "approval",
    summary: { description: "labelled an approval" },
    unsigned_transaction: transfer(FEE, micro).unsigned_transaction as { chain_id: number; to: `0x${string}`; data: Hex; value: string },
  });

  it("three 100 USDC transfers labelled 'approval' pass a 150 cap only once", async () => {
    const { agent, audit } = await agentWithCap(150);
    await expect(agent.signStep(step(0, 100_000_000n))).resolves.toMatch(/^0x/);
    for (const i of [1, 2]) {
      const err = await agent.signStep(step(i, 100_000_000n)).catch((e) => e);
      expect(err).toBeInstanceOf(RefusedError);
      expect(err.message).toMatch(/daily cap of 150/);
    }
    expect(audit.entries().filter((e) => e.event === "signed")).toHaveLength(1);
    expect(audit.todayMicro("signed")).toBe(100_000_000n);
  });

  it("concurrent signatures cannot share the same headroom", async () => {
    const { agent, audit } = await agentWithCap(250);
    const results = await Promise.allSettled([0, 1, 2, 3].map((i) => agent.signStep(step(i, 100_000_000n))));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    expect(audit.todayMicro("signed")).toBe(200_000_000n);
  });

  it("preflight refuses a transaction for another chain and a target without code", async () => {
    const { Preflight, PreflightError } = await import("../../signer-agent/src/preflight");
    const preflight = new Preflight(fork.rpcUrl);
    const t = step(0, 1n).unsigned_transaction;
    const otherChain = await preflight.prepare({ ...t, chain_id: 42161 }, self).catch((e) => e);
    expect(otherChain).toBeInstanceOf(PreflightError);
    expect(otherChain.message).toBe("the fork answers chain 8453, the transaction is for 42161");
    const empty = "0x000000000000000000000000000000000000dEaD";
    const noCode = await preflight.prepare({ ...t, to: empty }, self).catch((e) => e);
    expect(noCode).toBeInstanceOf(PreflightError);
    expect(noCode.message).toBe(`no contract at ${empty} on chain 8453`);
  });

  it("refuses a policy amount that is not exact in micro-USDC", async () => {
    const { loadPolicy } = await import("../../signer-agent/src/policy");
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "policy-")), "policy.json");
    fs.writeFileSync(file, JSON.stringify({ ...policy, daily_cap_usdc: 0.1234567 }));
    expect(() => loadPolicy(file)).toThrow(/daily_cap_usdc.*6 decimals/);
  });
});
