/**
 * What a signer's rule sees of an envelope: the calls it decoded from the
 * calldata itself (never a label the gateway put on a step), and the helpers
 * each action's rule is written with (actions/*.ts `signer.check`). The
 * signer agent (signer-agent/src/policy.ts) decodes, builds this context and
 * runs the declaration's rule; the rule refuses with a reason or says how
 * many calls the action needs, and any other call is refused.
 */
import type { AaveMarket } from "../contracts/chains";
import { formatDecimal } from "../domain/money";

/**
 * What a decoded call does:
 *   fee          USDC transfer to an allowed fee recipient
 *   approve      token approval (moves nothing by itself)
 *   supply       Aave supply on behalf of this wallet
 *   borrow       Aave borrow on behalf of this wallet
 *   repay        Aave repay on behalf of this wallet
 *   swap         Uniswap exactInputSingle to this wallet
 *   withdraw     Aave withdraw to this wallet (never to another address)
 */
export type Role = "fee" | "approve" | "supply" | "borrow" | "repay" | "swap" | "withdraw";

/** what the agent asked for: the action's amount (micro-USDC), and for a token amount its asset and units */
export interface SignerIntent {
  amountMicro: bigint;
  target?: "btc" | "eth";
  asset?: "USDC" | "ETH" | "BTC";
  units?: bigint;
  /** each swap's least acceptable output (the signer's own quote of the pool less its policy's maximum slippage), by tokens and amount in */
  swapFloors?: SwapFloor[];
  /** exit: the wallet's position as the signer reads it on its own RPC: its USDC debt and each token's supply (aToken balance), exact units */
  position?: { debt: bigint; supplied: Record<`0x${string}`, bigint> };
  /** exit: a sale was asked (swaps after the last repayment) */
  sell?: boolean;
}

export interface SwapFloor {
  token: `0x${string}`;
  tokenOut: `0x${string}`;
  amountIn: bigint;
  floor: bigint;
}

export interface DecodedCall {
  functionName: string;
  role: Role;
  args: readonly unknown[];
  /** the contract called */
  to: `0x${string}`;
  /** the token the call moves or approves */
  token: `0x${string}`;
  /** units of `token` moved (or approved), exact */
  amount: bigint;
  /** the approval's spender, the transfer's recipient, the swap's output token */
  counterparty?: `0x${string}`;
  /** micro-USDC this call moves out of or into the wallet's position (0 for approvals and non-USDC moves) */
  usdcMoved: bigint;
}

export class PolicyRefusal extends Error {}

/** the helpers an action's rule is written with, over one envelope's decoded calls */
export interface SignerRuleContext {
  market: AaveMarket;
  pool: `0x${string}`;
  usdc: `0x${string}`;
  router: `0x${string}`;
  refuse(why: string): never;
  /** how many calls have this role */
  count(role: Role): number;
  /** the one call of a role that matches, or a refusal naming what was expected */
  only(role: Role, where: (c: DecodedCall) => boolean, what: string): DecodedCall;
  /** the envelope's one fee (0 without one), refused above the policy's rate or when there are several */
  fee(): bigint;
  /** refuses a swap bounded under the signer's own floor for it, or one it has no floor for */
  floor(swap: DecodedCall): void;
}

export function signerRuleContext(
  action: string,
  calls: DecodedCall[],
  market: AaveMarket & { router: `0x${string}` },
  amount: bigint,
  maxFee: bigint,
  maxFeeBps: number,
  floors: SwapFloor[] = [],
): SignerRuleContext {
  const refuse = (why: string): never => {
    throw new PolicyRefusal(why);
  };
  return {
    market,
    pool: market.pool,
    usdc: market.usdc,
    router: market.router,
    refuse,
    count: (role) => calls.filter((c) => c.role === role).length,
    only: (role, where, what) => {
      const found = calls.filter((c) => c.role === role && where(c));
      if (found.length !== 1) refuse(`the ${action} needs exactly one ${what}; the envelope has ${found.length}`);
      return found[0]!;
    },
    fee: () => {
      const fees = calls.filter((c) => c.role === "fee");
      if (fees.length > 1) refuse(`the envelope pays ${fees.length} fees; at most one is allowed`);
      const f = fees[0]?.amount ?? 0n;
      if (f > maxFee)
        refuse(
          `the fee of ${formatDecimal(f, 6)} USDC is above the ${maxFeeBps / 100}% rate on ${formatDecimal(amount, 6)} (at most ${formatDecimal(maxFee, 6)})`,
        );
      return f;
    },
    floor: (swap) => {
      const minOut = (swap.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
      const floor = floors.find((f) => f.token === swap.token && f.tokenOut === swap.counterparty && f.amountIn === swap.amount)?.floor;
      if (floor === undefined) refuse(`no quote of its own for the ${action}'s swap: not signed`);
      const show = (n: bigint) => (swap.counterparty === market.usdc ? `${formatDecimal(n, 6)} USDC` : `${n} units`);
      if (minOut < floor!) refuse(`the ${action}'s swap accepts as little as ${show(minOut)}, under the ${show(floor!)} the policy's maximum slippage allows`);
    },
  };
}
