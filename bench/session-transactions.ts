/**
 * On-chain transactions per `calls` session calls: every payer's first call is its deposit, the rest are
 * vouchers signed beforehand (sessions.ts), then the gateway's redemption policy redeems what is left (its age
 * rule, within seconds of the last call). Every transaction mined from before the first deposit until the
 * receiver holds every charge is counted, sorted by the BatchSettlement function it calls; beside it, what the
 * policy says (a deposit per channel, a claim and a settle per batch of X402_SESSION_REDEEM_VOUCHERS
 * vouchers, a batch claiming up to 50 channels) and `exact`'s one transfer per call.
 */
import type { PaymentRequired } from "@x402/core/types";
import { createPublicClient, http, toFunctionSelector, type Hex } from "viem";
import { baseSepolia } from "viem/chains";
import type { BaseSepoliaNode } from "../fixtures/base-sepolia";
import { load, type Target } from "./http-load";
import { SESSION_GATEWAY_ENV } from "./processes";
import type { SessionPayer, VoucherBatch } from "./session-payers";

/** the BatchSettlement functions a transaction may call (contracts-abi/src/x402/BatchSettlement.sol) */
const CONFIG = "(address,address,address,address,address,uint40,bytes32)";
const SELECTORS: Record<string, "deposits" | "claims" | "settles"> = {
  [toFunctionSelector(`deposit(${CONFIG},uint128,address,bytes)`)]: "deposits",
  [toFunctionSelector(`claimWithSignature(((${CONFIG},uint128),bytes,uint128)[],bytes)`)]: "claims",
  [toFunctionSelector(`claim(((${CONFIG},uint128),bytes,uint128)[])`)]: "claims",
  [toFunctionSelector("settle(address,address)")]: "settles",
};

export async function transactionsPerCalls(o: {
  chain: BaseSepoliaNode;
  payTo: `0x${string}`;
  payers: SessionPayer[];
  required: PaymentRequired;
  url: string;
  calls: number;
  vouchers: (payers: SessionPayer[], required: PaymentRequired, count: number, connections: number) => Promise<VoucherBatch[]>;
  target: (payers: SessionPayer[], batches: VoucherBatch[], url: string) => Target;
}) {
  const c = o.payers.length;
  const price = BigInt(o.required.accepts.find((a) => a.scheme === "batch-settlement")!.amount);
  const pub = createPublicClient({ chain: baseSepolia, transport: http(o.chain.rpcUrl) });
  const startBlock = await pub.getBlockNumber();
  const receiverBefore = await o.chain.balanceOf(o.payTo);
  const t0 = performance.now();
  for (const p of o.payers) await p.deposit(o.url); // each channel's first call: its deposit
  const depositSeconds = (performance.now() - t0) / 1000;
  // the rest of the calls, their vouchers signed beforehand (not in the time)
  const batches = await o.vouchers(o.payers, o.required, o.calls - c, c);
  const rest = await load("session calls (transaction count)", o.target(o.payers, batches, o.url), { connections: c, count: o.calls - c });
  // the last vouchers are redeemed by the policy's age rule: wait until the receiver holds every charge
  const charged = BigInt(o.calls - rest.failures) * price;
  const deadline = Date.now() + 30_000;
  while ((await o.chain.balanceOf(o.payTo)) - receiverBefore < charged && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const redeemed = (await o.chain.balanceOf(o.payTo)) - receiverBefore;
  const endBlock = await pub.getBlockNumber();
  const kinds = { deposits: 0, claims: 0, settles: 0, other: 0 };
  for (let b = startBlock + 1n; b <= endBlock; b++)
    for (const tx of (await pub.getBlock({ blockNumber: b, includeTransactions: true })).transactions)
      kinds[SELECTORS[(tx.input as Hex).slice(0, 10)] ?? "other"] += 1;
  const perBatch = Number(SESSION_GATEWAY_ENV.X402_SESSION_REDEEM_VOUCHERS);
  return {
    calls: o.calls,
    clients: c,
    failures: rest.failures,
    calls_seconds: Number((depositSeconds + rest.seconds).toFixed(1)),
    redeemed_micro: redeemed.toString(),
    charged_micro: charged.toString(),
    measured: Object.values(kinds).reduce((a, b) => a + b, 0),
    ...kinds,
    policy: {
      redeem_vouchers: perBatch,
      redeem_seconds: Number(SESSION_GATEWAY_ENV.X402_SESSION_REDEEM_SECONDS),
      expected: c + 2 * Math.ceil(o.calls / perBatch),
    },
    exact: o.calls,
  };
}
