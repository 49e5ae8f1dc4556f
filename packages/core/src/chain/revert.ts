/**
 * A revert in words, and Aave's refusals as the gateway's typed errors. Aave 3.6 reverts with custom errors
 * (contracts/aave-errors.ts): their data is decoded by name (`HealthFactorLowerThanLiquidationThreshold()`), a
 * string revert (`Error(string)`) gives its message, a panic its code, any other custom error its selector. The
 * errors that refuse what the service prepares are typed (AAVE_REFUSALS): a refused borrow, a call that would
 * leave the position liquidatable. The gateway (relay, managed execution) and the signer agent (preflight) both
 * read reverts through this module.
 */
import { BaseError, ContractFunctionRevertedError, decodeErrorResult, decodeFunctionData, type Hex } from "viem";
import { AAVE_ERRORS_ABI, type AaveErrorName } from "../contracts/aave-errors";
import { AAVE_POOL_ABI } from "../contracts/aave-pool";
import { TreasuryError, type ErrorCode } from "../lib/errors";
import { ChainCallInTransaction } from "../lib/store-transaction";

/** the revert data an error carries (the innermost 0x string `data`, or a contract revert's `raw`), if any */
export function revertDataOf(err: unknown): Hex | undefined {
  if (!(err instanceof BaseError)) return undefined;
  const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (reverted?.raw) return reverted.raw;
  const found = err.walk((e) => typeof (e as { data?: unknown }).data === "string" && String((e as { data: string }).data).startsWith("0x")) as {
    data?: Hex;
  } | null;
  return found?.data;
}

/** an Aave error the data decodes to, with its arguments */
export function aaveErrorOf(data: Hex | undefined): { name: AaveErrorName; args: readonly unknown[] } | undefined {
  if (!data || data.length < 10) return undefined;
  try {
    const decoded = decodeErrorResult({ abi: AAVE_ERRORS_ABI, data });
    if (["Error", "Panic"].includes(decoded.errorName as string)) return undefined;
    return { name: decoded.errorName as AaveErrorName, args: decoded.args ?? [] };
  } catch {
    return undefined;
  }
}

/** revert data in words: an Aave error by name (`Name(args)`), Error(string)'s message, Panic(code), or the custom error's selector */
export function describeRevertData(data: Hex): string {
  if (data === "0x") return "reverted without a reason";
  try {
    const decoded = decodeErrorResult({ abi: AAVE_ERRORS_ABI, data });
    const args = (decoded.args ?? []) as readonly unknown[];
    const name = decoded.errorName as string;
    if (name === "Error") return String(args[0] ?? "");
    if (name === "Panic") return `Panic(0x${BigInt(args[0] as bigint).toString(16)})`;
    return `${decoded.errorName}(${args.map(String).join(", ")})`;
  } catch {
    return `custom error ${data.slice(0, 10)}`;
  }
}

/** an error in words: a revert's reason decoded (describeRevertData), a call refused inside a store transaction, or viem's short message */
export function describeRevert(err: unknown): string {
  if (err instanceof BaseError) {
    // a call refused inside a store transaction says so, not viem's "HTTP request failed."
    const refused = err.walk((e) => e instanceof ChainCallInTransaction);
    if (refused instanceof ChainCallInTransaction) return refused.message;
    const data = revertDataOf(err);
    if (data && data.length > 2) return describeRevertData(data);
    const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    const reason = reverted?.reason ?? (err.walk() as { reason?: string })?.reason;
    return reason ?? err.shortMessage;
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}

/** what a typed refusal is: the code the gateway answers, and Aave's reason in words */
export interface AaveRefusal {
  code: Extract<ErrorCode, "borrow_refused" | "would_be_liquidatable">;
  /** the Aave error's name */
  aaveError: AaveErrorName;
  /** why, in plain words */
  why: string;
}

/** errors only a borrow's validation throws: a refused borrow whatever call reached it (a Safe's batch, say) */
const BORROW_ONLY: Partial<Record<AaveErrorName, string>> = {
  CollateralCannotCoverNewBorrow: "the collateral cannot cover the new debt at the position's LTV",
  BorrowCapExceeded: "the reserve's borrow cap would be exceeded",
  BorrowingNotEnabled: "borrowing is not enabled on the reserve",
  NotBorrowableInEMode: "the asset is not borrowable in the position's eMode",
  SiloedBorrowingViolation: "a siloed asset cannot be borrowed beside another",
  AssetNotBorrowableInIsolation: "the asset is not borrowable in isolation mode",
  DebtCeilingExceeded: "the isolated collateral's debt ceiling would be exceeded",
};

/** the plain words of the Aave errors a refusal or a revert names */
const WHY: Partial<Record<AaveErrorName, string>> = {
  ...BORROW_ONLY,
  HealthFactorLowerThanLiquidationThreshold: "the health factor would fall under 1: the position would be liquidatable",
  LtvValidationFailed: "the position's LTV is zero (a collateral of LTV 0 is withdrawn first)",
  ReserveFrozen: "the reserve is frozen",
  ReservePaused: "the reserve is paused",
  ReserveInactive: "the reserve is inactive",
  PriceOracleSentinelCheckFailed: "the price oracle sentinel refuses it (the sequencer is down or in its grace period)",
  MustNotLeaveDust: "a liquidation may not leave collateral or debt under MIN_LEFTOVER_BASE: it takes the whole position or leaves more",
  InvalidAmount: "the amount is zero",
};

/** the Pool function a call's data names, if it is one of the project's Pool calls */
function poolFunctionOf(calldata: Hex | undefined): string | undefined {
  if (!calldata) return undefined;
  try {
    return decodeFunctionData({ abi: AAVE_POOL_ABI, data: calldata }).functionName;
  } catch {
    return undefined;
  }
}

/**
 * The typed refusal of Aave's revert of a call (its data `calldata`): every Aave error of a Pool `borrow`, or an
 * error only a borrow throws, is `borrow_refused`; a health factor that would fall under 1 on any other call (a
 * withdraw, a collateral sent or disabled) is `would_be_liquidatable`. Anything else is not typed (undefined).
 */
export function aaveRefusalOf(revertData: Hex | undefined, calldata?: Hex): AaveRefusal | undefined {
  const error = aaveErrorOf(revertData);
  if (!error) return undefined;
  const why = WHY[error.name] ?? error.name;
  if (poolFunctionOf(calldata) === "borrow" || BORROW_ONLY[error.name]) return { code: "borrow_refused", aaveError: error.name, why };
  if (error.name === "HealthFactorLowerThanLiquidationThreshold") return { code: "would_be_liquidatable", aaveError: error.name, why };
  return undefined;
}

/**
 * The TreasuryError of a revert of `calldata` (a simulation, a node's refusal): Aave's typed refusal when it is
 * one, else `otherwise` (transaction_would_revert, broadcast_rejected); both carry `revert_reason` and, for an
 * Aave error, `aave_error`.
 */
export function revertError(err: unknown, calldata: Hex | undefined, otherwise: ErrorCode, context: string): TreasuryError {
  const reason = describeRevert(err);
  const data = revertDataOf(err);
  const refusal = aaveRefusalOf(data, calldata);
  const aave = aaveErrorOf(data);
  const fields = { revert_reason: reason, ...(aave ? { aave_error: aave.name } : {}) };
  if (refusal) return new TreasuryError(refusal.code, `${context}: Aave refuses it, ${refusal.why} (${refusal.aaveError})`, fields, {}, { cause: err });
  const why = aave && WHY[aave.name];
  return new TreasuryError(otherwise, `${context}: ${reason}${why ? ` (${why})` : ""}`, fields, {}, { cause: err });
}
