/**
 * The signer's policy: what it will sign. Anything outside it is refused with
 * the reason. Checks decode the calldata itself; the envelope's summary is
 * never trusted.
 */
import fs from "node:fs";
import { decodeFunctionData, getAddress, type Hex } from "viem";
import { z } from "zod";
import { AAVE_POOL_ABI } from "../../contracts-abi/aave-pool";
import { AAVE_MARKETS } from "../../contracts-abi/chains";
import { ERC20_ABI } from "../../contracts-abi/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "../../contracts-abi/uniswap";

const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/).transform((a) => getAddress(a));

export const PolicySchema = z.object({
  allowed_chains: z.array(z.number().int()).min(1),
  allowed_targets: z.record(z.string(), z.string()),
  allowed_functions: z.array(z.string()).min(1),
  approve_spenders: z.array(Address),
  transfer_recipients: z.array(Address),
  per_transaction_cap_usdc: z.number().positive(),
  daily_cap_usdc: z.number().positive(),
  x402_max_price_usdc: z.number().positive(),
  x402_daily_budget_usdc: z.number().positive(),
});
export type Policy = z.infer<typeof PolicySchema>;

export class PolicyRefusal extends Error {}

/** the default policy: Aave pools and tokens of the address book (Base, Arbitrum), the convert router */
export function defaultPolicy(feeRecipients: string[]): Policy {
  const targets: Record<string, string> = {};
  const spenders: `0x${string}`[] = [];
  for (const key of ["base", "arbitrum"] as const) {
    const m = AAVE_MARKETS[key];
    targets[m.pool] = `Aave V3 Pool (${key})`;
    targets[m.usdc] = `USDC (${key})`;
    targets[m.weth] = `WETH (${key})`;
    targets[m.btc] = `${key === "base" ? "cbBTC" : "WBTC"} (${key})`;
    const router = swapRouter02(m.chainId);
    targets[router] = `Uniswap V3 SwapRouter02 (${key})`;
    spenders.push(m.pool, router);
  }
  return {
    allowed_chains: [8453, 42161],
    allowed_targets: targets,
    allowed_functions: ["supply", "borrow", "repay", "approve", "transfer", "exactInputSingle"],
    approve_spenders: spenders,
    transfer_recipients: feeRecipients.map((a) => getAddress(a)),
    per_transaction_cap_usdc: 10_000,
    daily_cap_usdc: 50_000,
    x402_max_price_usdc: 0.1,
    x402_daily_budget_usdc: 5,
  };
}

export function loadPolicy(file: string): Policy {
  const parsed = PolicySchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
  if (!parsed.success) throw new Error(`invalid policy ${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

const ABIS = [...AAVE_POOL_ABI, ...ERC20_ABI, ...SWAP_ROUTER_02_ABI];

export interface DecodedCall {
  functionName: string;
  args: readonly unknown[];
  /** the USDC amount this call moves, if it moves USDC */
  usdcAmount: number | null;
}

export interface StepTx {
  chain_id: number;
  to: `0x${string}`;
  data: Hex;
  value: string;
}

const usdcAddresses = () => new Set(Object.values(AAVE_MARKETS).map((m) => m.usdc.toLowerCase()));

/** refuse anything outside the policy; returns the decoded call */
export function checkStep(policy: Policy, tx: StepTx, self: `0x${string}`): DecodedCall {
  const refuse = (why: string): never => {
    throw new PolicyRefusal(why);
  };
  if (!policy.allowed_chains.includes(tx.chain_id)) refuse(`chain ${tx.chain_id} is not allowed`);
  const to = getAddress(tx.to);
  const targets = Object.fromEntries(Object.entries(policy.allowed_targets).map(([a, n]) => [getAddress(a), n]));
  if (!targets[to]) refuse(`target ${to} is not allowed`);
  if (BigInt(tx.value) !== 0n) refuse(`value ${tx.value} is not allowed (only 0)`);
  let decoded: { functionName: string; args: readonly unknown[] };
  try {
    decoded = decodeFunctionData({ abi: ABIS, data: tx.data }) as { functionName: string; args: readonly unknown[] };
  } catch {
    return refuse(`calldata ${tx.data.slice(0, 10)} is not a known function`);
  }
  const fn = decoded.functionName;
  if (!policy.allowed_functions.includes(fn)) refuse(`function ${fn} is not allowed`);
  const a = decoded.args;
  const isUsdc = (addr: unknown) => usdcAddresses().has(String(addr).toLowerCase());
  let usdc: number | null = null;
  switch (fn) {
    case "supply":
      if (getAddress(a[2] as string) !== getAddress(self)) refuse(`supply on behalf of ${a[2]}, not this wallet`);
      if (!targets[getAddress(a[0] as string)]) refuse(`asset ${a[0]} is not allowed`);
      if (isUsdc(a[0])) usdc = Number(a[1]) / 1e6;
      break;
    case "borrow":
      if (getAddress(a[4] as string) !== getAddress(self)) refuse(`borrow on behalf of ${a[4]}, not this wallet`);
      if (!isUsdc(a[0])) refuse("only USDC may be borrowed");
      usdc = Number(a[1]) / 1e6;
      break;
    case "repay":
      if (getAddress(a[3] as string) !== getAddress(self)) refuse(`repay on behalf of ${a[3]}, not this wallet`);
      if (isUsdc(a[0])) usdc = Number(a[1]) / 1e6;
      break;
    case "approve":
      if (!policy.approve_spenders.includes(getAddress(a[0] as string))) refuse(`approval to ${a[0]} is not allowed`);
      if (isUsdc(to)) usdc = Number(a[1]) / 1e6;
      break;
    case "transfer":
      if (!policy.transfer_recipients.includes(getAddress(a[0] as string))) refuse(`transfer to ${a[0]} is not allowed`);
      if (isUsdc(to)) usdc = Number(a[1]) / 1e6;
      break;
    case "exactInputSingle": {
      const p = a[0] as { tokenIn: string; tokenOut: string; recipient: string; amountIn: bigint };
      if (getAddress(p.recipient) !== getAddress(self)) refuse(`swap proceeds go to ${p.recipient}, not this wallet`);
      if (!targets[getAddress(p.tokenIn)] || !targets[getAddress(p.tokenOut)]) refuse("swap tokens are not allowed");
      if (isUsdc(p.tokenIn)) usdc = Number(p.amountIn) / 1e6;
      break;
    }
  }
  if (usdc !== null && usdc > policy.per_transaction_cap_usdc) refuse(`${usdc} USDC is above the per-transaction cap of ${policy.per_transaction_cap_usdc}`);
  return { functionName: fn, args: decoded.args, usdcAmount: usdc };
}

/** What the agent asked for must be what the envelope does (a tampered envelope is refused). */
export function checkIntent(
  intent: { action: "deposit" | "convert" | "borrow" | "repay"; amountUsdc: number; target?: "btc" | "eth" },
  envelope: { action: string; amount_usdc: number; steps: { kind: string; unsigned_transaction: StepTx }[] },
  self: `0x${string}`,
  policy: Policy,
): DecodedCall[] {
  if (envelope.action !== intent.action) throw new PolicyRefusal(`asked for ${intent.action}, the envelope is a ${envelope.action}`);
  if (envelope.amount_usdc !== intent.amountUsdc) throw new PolicyRefusal(`asked for ${intent.amountUsdc} USDC, the envelope says ${envelope.amount_usdc}`);
  const decoded = envelope.steps.map((s) => checkStep(policy, s.unsigned_transaction, self));
  const main = envelope.steps.findIndex((s) => s.kind === "pool_call");
  if (main < 0) throw new PolicyRefusal("the envelope has no pool call");
  const call = decoded[main]!;
  const expected = { deposit: "supply", convert: "supply", borrow: "borrow", repay: "repay" }[intent.action];
  if (call.functionName !== expected) throw new PolicyRefusal(`a ${intent.action} must call ${expected}, the envelope calls ${call.functionName}`);
  const feeBound = intent.amountUsdc * 0.025;
  for (const [i, d] of decoded.entries()) {
    const kind = envelope.steps[i]!.kind;
    if (kind === "fee_transfer" && (d.usdcAmount ?? 0) > feeBound) throw new PolicyRefusal(`the fee of ${d.usdcAmount} USDC is above 2.5% of ${intent.amountUsdc}`);
    if (d.usdcAmount !== null && d.usdcAmount > intent.amountUsdc) throw new PolicyRefusal(`step ${i} moves ${d.usdcAmount} USDC, more than the ${intent.amountUsdc} asked for`);
  }
  if ((intent.action === "borrow" || intent.action === "repay") && call.usdcAmount !== intent.amountUsdc) {
    throw new PolicyRefusal(`the ${intent.action} moves ${call.usdcAmount} USDC, not ${intent.amountUsdc}`);
  }
  if (intent.action === "deposit" && (call.usdcAmount === null || call.usdcAmount < intent.amountUsdc - feeBound)) {
    throw new PolicyRefusal(`the deposit supplies ${call.usdcAmount} USDC, too little for ${intent.amountUsdc}`);
  }
  return decoded;
}
