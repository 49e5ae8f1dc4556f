/**
 * The protection module's calls as the engine sends them: a repayment from idle or supplied USDC through
 * execute(to, data), or deleverage(collateral, amount, flash); their gas limits, their ABI encoding, and a
 * module's (or Aave's) revert decoded for the record.
 */
import { BaseError, ContractFunctionRevertedError, type Hex } from "viem";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";

/** the gas limit of one module call: an estimate made a block earlier omits Aave's index updates; unused gas is not paid */
export const EXECUTE_GAS_LIMIT = 1_000_000n;
/** a deleverage (withdraw, swap, repay, a flash loan around them: about 1.1 M gas on the fork) */
export const DELEVERAGE_GAS_LIMIT = 2_500_000n;
/** one module call: execute(to, data) for a repayment from idle USDC, or deleverage(collateral, amount, flash) */
export type Call =
  | { kind: "approve" | "repay"; fn: "execute"; args: readonly [`0x${string}`, Hex]; gas: bigint }
  | { kind: "deleverage"; fn: "deleverage"; args: readonly [`0x${string}`, bigint, bigint]; gas: bigint };

export const moduleCall = (c: Call) =>
  ({ abi: PROTECTION_MODULE_ABI, functionName: c.fn, args: c.args }) as {
    abi: typeof PROTECTION_MODULE_ABI;
    functionName: "execute";
    args: readonly [`0x${string}`, Hex];
  };

/** a module (or Aave) revert as `Name(args)`, decoded from the module's ABI */
export function moduleRevertReason(err: unknown): string {
  if (err instanceof BaseError) {
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    if (reverted?.data?.errorName) return `${reverted.data.errorName}(${(reverted.data.args ?? []).map(String).join(", ")})`;
    if (reverted?.reason) return reverted.reason;
    return err.shortMessage;
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}
