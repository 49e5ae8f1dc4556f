/**
 * The signer's policy: what it will sign. Anything outside it is refused with
 * the reason. Checks decode the calldata itself; the envelope's summary is
 * never trusted.
 */
import fs from "node:fs";
import { decodeFunctionData, getAddress, maxUint256, type Hex } from "viem";
import { z } from "zod";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS, CHAINS, TREASURY_CHAINS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { SWAP_ROUTER_02_ABI, swapRouter02 } from "@treasury/core/contracts/uniswap";
import { declarationOf, DECLARED, TREASURY_ACTIONS, type TreasuryAction } from "@treasury/core/actions";
import { PolicyRefusal, signerRuleContext, type DecodedCall, type SignerIntent } from "@treasury/core/actions/signer-rule";
import { formatDecimal, isExactUsdc, parseUsdc } from "@treasury/core/domain/money";

const Address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/)
  .transform((a) => getAddress(a));

export const PolicySchema = z
  .object({
    allowed_chains: z.array(z.number().int()).min(1),
    allowed_targets: z.record(z.string(), z.string()),
    allowed_functions: z.array(z.string()).min(1),
    approve_spenders: z.array(Address),
    transfer_recipients: z.array(Address),
    per_transaction_cap_usdc: z.number().positive(),
    daily_cap_usdc: z.number().positive(),
    x402_max_price_usdc: z.number().positive(),
    x402_daily_budget_usdc: z.number().positive(),
    /** the most the service fee may be, basis points of the amount (the published rate: 2%) */
    max_fee_bps: z.number().int().min(0).max(1000).optional(),
    /** the most a swap may give up under the signer's own quote (the pool's, asked with its own RPC), basis points */
    max_slippage_bps: z.number().int().min(0).max(1000).optional(),
    /** `signer-agent mcp`: an action of more than this (USDC) asks a person first, through the MCP host */
    confirm_above_usdc: z.number().nonnegative().optional(),
    /** `signer-agent mcp`: the actions that always ask a person first */
    confirm_actions: z.array(z.enum(TREASURY_ACTIONS as unknown as [TreasuryAction, ...TreasuryAction[]])).optional(),
  })
  .superRefine((p, ctx) => {
    for (const k of ["per_transaction_cap_usdc", "daily_cap_usdc", "x402_max_price_usdc", "x402_daily_budget_usdc"] as const) {
      if (!isExactUsdc(p[k])) ctx.addIssue({ code: "custom", path: [k], message: "at most 6 decimals (exact micro-USDC)" });
    }
  });
export type Policy = z.infer<typeof PolicySchema>;

export { PolicyRefusal } from "@treasury/core/actions/signer-rule";

/** the published service fee rate: 2% (spec section 1) */
export const DEFAULT_MAX_FEE_BPS = 200;
/** a swap's bound under the signer's own quote: the gateway bounds at 1% under its quote; 1.5% leaves room for the pool to move between */
export const DEFAULT_MAX_SLIPPAGE_BPS = 150;

/** the default policy: Aave pools and tokens of the address book (the treasury chains: Base, Arbitrum), the convert router */
export function defaultPolicy(feeRecipients: string[]): Policy {
  const targets: Record<string, string> = {};
  const spenders: `0x${string}`[] = [];
  for (const key of TREASURY_CHAINS) {
    const { market: m, btcSymbol } = CHAINS[key];
    targets[m.pool] = `Aave V3 Pool (${key})`;
    targets[m.usdc] = `USDC (${key})`;
    targets[m.weth] = `WETH (${key})`;
    targets[m.btc] = `${btcSymbol} (${key})`;
    const router = swapRouter02(m.chainId);
    targets[router] = `Uniswap V3 SwapRouter02 (${key})`;
    spenders.push(m.pool, router);
  }
  return {
    allowed_chains: TREASURY_CHAINS.map((key) => CHAINS[key].chainId),
    allowed_targets: targets,
    allowed_functions: [...new Set(DECLARED.flatMap((d) => d.signer.functions))],
    approve_spenders: spenders,
    transfer_recipients: feeRecipients.map((a) => getAddress(a)),
    per_transaction_cap_usdc: 10_000,
    daily_cap_usdc: 50_000,
    x402_max_price_usdc: 0.1,
    x402_daily_budget_usdc: 5,
    max_fee_bps: DEFAULT_MAX_FEE_BPS,
  };
}

export function loadPolicy(file: string): Policy {
  const parsed = PolicySchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
  if (!parsed.success) throw new Error(`invalid policy ${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

const ABIS = [...AAVE_POOL_ABI, ...ERC20_ABI, ...SWAP_ROUTER_02_ABI];

/** a policy amount (JSON number of USDC) as exact micro-USDC */
export const policyMicro = (usdc: number): bigint => parseUsdc(usdc);

/** what a decoded call does, read from the calldata alone (never from a label the gateway or the caller put on the step) */
export type { DecodedCall, Role } from "@treasury/core/actions/signer-rule";

export interface StepTx {
  chain_id: number;
  to: `0x${string}`;
  data: Hex;
  value: string;
}

const usdcAddresses = () => new Set(Object.values(AAVE_MARKETS).map((m) => m.usdc.toLowerCase()));
const isUsdc = (addr: unknown) => usdcAddresses().has(String(addr).toLowerCase());

/** refuse anything outside the policy; returns what the call does, decoded */
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
  const me = getAddress(self);
  let call: DecodedCall;
  switch (fn) {
    case "supply":
      if (getAddress(a[2] as string) !== me) refuse(`supply on behalf of ${a[2]}, not this wallet`);
      if (!targets[getAddress(a[0] as string)]) refuse(`asset ${a[0]} is not allowed`);
      call = {
        functionName: fn,
        role: "supply",
        args: a,
        to,
        token: getAddress(a[0] as string),
        amount: a[1] as bigint,
        usdcMoved: isUsdc(a[0]) ? (a[1] as bigint) : 0n,
      };
      break;
    case "borrow":
      if (getAddress(a[4] as string) !== me) refuse(`borrow on behalf of ${a[4]}, not this wallet`);
      if (!isUsdc(a[0])) refuse("only USDC may be borrowed");
      call = { functionName: fn, role: "borrow", args: a, to, token: getAddress(a[0] as string), amount: a[1] as bigint, usdcMoved: a[1] as bigint };
      break;
    case "repay":
      if (getAddress(a[3] as string) !== me) refuse(`repay on behalf of ${a[3]}, not this wallet`);
      // all of the debt (type(uint256).max): bounded by its approval, which moves nothing; a repayment only lowers the wallet's own debt
      call = {
        functionName: fn,
        role: "repay",
        args: a,
        to,
        token: getAddress(a[0] as string),
        amount: a[1] as bigint,
        usdcMoved: isUsdc(a[0]) && (a[1] as bigint) !== maxUint256 ? (a[1] as bigint) : 0n,
      };
      break;
    case "repayWithATokens":
      // the wallet's own supplied USDC pays the wallet's own debt (Aave repays for msg.sender only)
      if (!isUsdc(a[0])) refuse("only USDC debt is repaid with aTokens");
      call = { functionName: fn, role: "repay", args: a, to, token: getAddress(a[0] as string), amount: a[1] as bigint, usdcMoved: 0n };
      break;
    case "approve":
      if (!policy.approve_spenders.includes(getAddress(a[0] as string))) refuse(`approval to ${a[0]} is not allowed`);
      call = { functionName: fn, role: "approve", args: a, to, token: to, amount: a[1] as bigint, counterparty: getAddress(a[0] as string), usdcMoved: 0n };
      break;
    case "transfer":
      if (!policy.transfer_recipients.includes(getAddress(a[0] as string))) refuse(`transfer to ${a[0]} is not allowed`);
      if (!isUsdc(to)) refuse("only USDC may be transferred (the service fee)");
      call = {
        functionName: fn,
        role: "fee",
        args: a,
        to,
        token: to,
        amount: a[1] as bigint,
        counterparty: getAddress(a[0] as string),
        usdcMoved: a[1] as bigint,
      };
      break;
    case "withdraw":
      // out of Aave, only ever to this wallet; what comes back to the wallet is not counted against its caps
      if (getAddress(a[2] as string) !== me) refuse(`withdrawal to ${a[2]}, not this wallet`);
      if (!targets[getAddress(a[0] as string)]) refuse(`asset ${a[0]} is not allowed`);
      call = { functionName: fn, role: "withdraw", args: a, to, token: getAddress(a[0] as string), amount: a[1] as bigint, usdcMoved: 0n };
      break;
    case "exactInputSingle": {
      const p = a[0] as { tokenIn: string; tokenOut: string; recipient: string; amountIn: bigint; amountOutMinimum: bigint };
      if (getAddress(p.recipient) !== me) refuse(`swap proceeds go to ${p.recipient}, not this wallet`);
      if (!targets[getAddress(p.tokenIn)] || !targets[getAddress(p.tokenOut)]) refuse("swap tokens are not allowed");
      call = {
        functionName: fn,
        role: "swap",
        args: a,
        to,
        token: getAddress(p.tokenIn),
        amount: p.amountIn,
        counterparty: getAddress(p.tokenOut),
        usdcMoved: isUsdc(p.tokenIn) ? p.amountIn : 0n,
      };
      break;
    }
    default:
      return refuse(`function ${fn} is not allowed`);
  }
  if (call.usdcMoved > policyMicro(policy.per_transaction_cap_usdc))
    refuse(`${formatDecimal(call.usdcMoved, 6)} USDC is above the per-transaction cap of ${policy.per_transaction_cap_usdc}`);
  return call;
}

/** the most a fee may be for `amount` at `bps`, as the gateway rounds it (half up) */
export const maxFeeFor = (amount: bigint, bps: bigint) => (amount * bps + 5_000n) / 10_000n;

/**
 * What the agent asked for must be exactly what the envelope does, read from
 * the decoded calldata alone: the calls an action needs, each once, nothing
 * else; the amounts add up to the intent; at most one fee of at most the
 * published rate (policy max_fee_bps), paid to an allowed recipient, and none
 * on a downward leg. Each action's own rule is in its declaration
 * (@treasury/core/actions/<action>.ts, `signer.check`). A tampered or inflated
 * envelope is refused.
 */
export function checkIntent(
  intent: SignerIntent & { action: TreasuryAction },
  envelope: { action: string; steps: { unsigned_transaction: StepTx }[] },
  self: `0x${string}`,
  policy: Policy,
): DecodedCall[] {
  const refuse = (why: string): never => {
    throw new PolicyRefusal(why);
  };
  if (envelope.action !== intent.action) refuse(`asked for ${intent.action}, the envelope is a ${envelope.action}`);
  if (envelope.steps.length === 0) refuse("the envelope has no steps");
  const calls = envelope.steps.map((s) => checkStep(policy, s.unsigned_transaction, self));
  const chainIds = new Set(envelope.steps.map((s) => s.unsigned_transaction.chain_id));
  if (chainIds.size !== 1) refuse("the envelope's steps are on different chains");
  const market = Object.values(AAVE_MARKETS).find((m) => m.chainId === envelope.steps[0]?.unsigned_transaction.chain_id);
  if (!market) return refuse("the envelope is on no known Aave market");
  // every call goes where its kind belongs in this market: Aave calls to its Pool, swaps to its router, approvals and fees on its tokens
  const pool = getAddress(market.pool);
  const router = getAddress(swapRouter02(market.chainId));
  const tokens = new Set([market.usdc, market.weth, market.btc].map((t) => getAddress(t)));
  for (const c of calls) {
    const where = c.role === "swap" ? router : c.role === "approve" || c.role === "fee" ? undefined : pool;
    if (where !== undefined && c.to !== where)
      refuse(`a ${c.functionName} sent to ${c.to}, not to ${c.role === "swap" ? "the market's router" : "the market's Pool"} ${where}`);
    if (where === undefined && !tokens.has(c.to)) refuse(`a ${c.functionName} on ${c.to}, not on a token of the market`);
  }
  const d = declarationOf(intent.action);
  const maxFeeBps = policy.max_fee_bps ?? DEFAULT_MAX_FEE_BPS;
  const ctx = signerRuleContext(
    intent.action,
    calls,
    {
      ...market,
      pool: getAddress(market.pool),
      usdc: getAddress(market.usdc),
      btc: getAddress(market.btc),
      weth: getAddress(market.weth),
      router: getAddress(swapRouter02(market.chainId)),
    },
    intent.amountMicro,
    maxFeeFor(intent.amountMicro, BigInt(maxFeeBps)),
    maxFeeBps,
    intent.swapFloors,
  );
  // a downward leg is free: a fee on one is refused, whatever its rule says
  if (d.direction === "down" && ctx.count("fee") > 0) refuse(`a ${intent.action} is free (a downward leg); the envelope pays a fee`);
  const expected = d.signer.check(calls, intent, ctx);
  if (calls.length !== expected) refuse(`the ${intent.action} needs ${expected} calls; the envelope has ${calls.length}`);
  return calls;
}
