/**
 * Signed statements: what a wallet signs to prove it stands behind a request.
 * Pure (no I/O): the gateway verifies them, the operator CLI, the signer agent
 * and the tests build them, all from these declarations.
 *
 * EIP-712, domain `{ name: "Agent Treasury Gateway", version: "1", chainId }`
 * with the chain id of the treasury's chain (8453 Base, 42161 Arbitrum), no
 * verifying contract. Every statement names the service (its public base URL),
 * carries a fresh nonce (single use per signer) and the time it was issued
 * (accepted for STATEMENT_MAX_AGE_SECONDS). An EOA signs it directly; a
 * contract wallet (a Safe) answers EIP-1271 `isValidSignature(hash, signature)`
 * for the statement's EIP-712 hash.
 *
 * Example (viem): `walletClient.signTypedData(registrationStatement({ service:
 * "https://gw.example", wallet, chain: "base", executionMode: "wallet", nonce:
 * "n-2f6c...", issuedAt: new Date().toISOString() }))`.
 */
import { hashTypedData } from "viem";
import { AAVE_MARKETS, type TreasuryChain } from "../contracts/chains";

export const STATEMENT_DOMAIN_NAME = "Agent Treasury Gateway";
export const STATEMENT_DOMAIN_VERSION = "1";
/** a statement older than this (or issued more than a minute in the future) is refused */
export const STATEMENT_MAX_AGE_SECONDS = 600;
export const STATEMENT_NONCE_PATTERN = /^[A-Za-z0-9._:-]{16,128}$/;

export const statementDomain = (chain: TreasuryChain) =>
  ({ name: STATEMENT_DOMAIN_NAME, version: STATEMENT_DOMAIN_VERSION, chainId: AAVE_MARKETS[chain].chainId }) as const;

export interface RegistrationFacts {
  service: string;
  wallet: `0x${string}`;
  chain: TreasuryChain;
  executionMode: "wallet" | "managed";
  nonce: string;
  issuedAt: string;
}

/** "this wallet registers a treasury with this service": proof of control at registration */
export function registrationStatement(f: RegistrationFacts) {
  return {
    domain: statementDomain(f.chain),
    types: {
      RegisterTreasury: [
        { name: "service", type: "string" },
        { name: "wallet", type: "address" },
        { name: "chain", type: "string" },
        { name: "executionMode", type: "string" },
        { name: "nonce", type: "string" },
        { name: "issuedAt", type: "string" },
      ],
    },
    primaryType: "RegisterTreasury",
    message: { service: f.service, wallet: f.wallet, chain: f.chain, executionMode: f.executionMode, nonce: f.nonce, issuedAt: f.issuedAt },
  } as const;
}

export interface DelegationFacts {
  service: string;
  chain: TreasuryChain;
  treasuryId: string;
  safe: `0x${string}`;
  module: `0x${string}`;
  /** protect below this health score, in hundredths (130 = 1.30) */
  protectBelowHealthCentis: number;
  /** the park target the module enforces, basis points of LTV */
  parkTargetBps: number;
  /** the most a deleverage's swap may return under Aave's oracle value, basis points (fixed in the module) */
  maxSlippageBps: number;
  nonce: string;
  issuedAt: string;
}

/** "this Safe attaches this module to this treasury with these thresholds": signed by the Safe's owners (EIP-1271) */
export function delegationStatement(f: DelegationFacts) {
  return {
    domain: statementDomain(f.chain),
    types: {
      AttachDelegation: [
        { name: "service", type: "string" },
        { name: "treasuryId", type: "string" },
        { name: "safe", type: "address" },
        { name: "module", type: "address" },
        { name: "protectBelowHealthCentis", type: "uint256" },
        { name: "parkTargetBps", type: "uint256" },
        { name: "maxSlippageBps", type: "uint256" },
        { name: "nonce", type: "string" },
        { name: "issuedAt", type: "string" },
      ],
    },
    primaryType: "AttachDelegation",
    message: {
      service: f.service,
      treasuryId: f.treasuryId,
      safe: f.safe,
      module: f.module,
      protectBelowHealthCentis: BigInt(f.protectBelowHealthCentis),
      parkTargetBps: BigInt(f.parkTargetBps),
      maxSlippageBps: BigInt(f.maxSlippageBps),
      nonce: f.nonce,
      issuedAt: f.issuedAt,
    },
  } as const;
}

export type Statement = ReturnType<typeof registrationStatement> | ReturnType<typeof delegationStatement>;

export const statementHash = (s: Statement) => hashTypedData(s as Parameters<typeof hashTypedData>[0]);

/** why a statement's time is not acceptable at `now`, or null */
export function statementTimeProblem(issuedAt: string, now: Date): string | null {
  const t = Date.parse(issuedAt);
  if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}T/.test(issuedAt)) return "issued_at must be an ISO 8601 timestamp";
  if (t > now.getTime() + 60_000) return "issued_at is in the future";
  if (now.getTime() - t > STATEMENT_MAX_AGE_SECONDS * 1000) return `the statement is older than ${STATEMENT_MAX_AGE_SECONDS} seconds; sign a fresh one`;
  return null;
}

/**
 * The EIP-712 message a Safe owner signs so that the Safe's
 * CompatibilityFallbackHandler accepts `isValidSignature(hash, sig)`:
 * SafeMessage(bytes message) with message = abi.encode(hash), in the Safe's
 * own domain (chainId, verifyingContract = Safe).
 */
export function safeMessageFor(safe: `0x${string}`, chainId: number, hash: `0x${string}`) {
  return {
    domain: { chainId, verifyingContract: safe },
    types: { SafeMessage: [{ name: "message", type: "bytes" }] },
    primaryType: "SafeMessage",
    message: { message: hash },
  } as const;
}
