/** Signed statements: the exact EIP-712 shapes the wallets sign, and the freshness rule. */
import { hashTypedData } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  delegationStatement,
  registrationStatement,
  safeMessageFor,
  STATEMENT_MAX_AGE_SECONDS,
  STATEMENT_NONCE_PATTERN,
  statementDomain,
  statementHash,
  statementTimeProblem,
} from "./statements";

const wallet = "0x00000000000000000000000000000000000000AA" as const;
const facts = {
  service: "https://gw.example",
  wallet,
  chain: "base" as const,
  executionMode: "wallet" as const,
  nonce: "nonce-0123456789ab",
  issuedAt: "2026-11-22T00:00:00.000Z",
};

describe("statements", () => {
  it("the domain names the service and the chain id of the treasury's chain", () => {
    expect(statementDomain("base")).toEqual({ name: "Agent Treasury Gateway", version: "1", chainId: 8453 });
    expect(statementDomain("arbitrum")).toEqual({ name: "Agent Treasury Gateway", version: "1", chainId: 42161 });
  });

  it("RegisterTreasury carries every fact, in order", () => {
    const s = registrationStatement(facts);
    expect(s.primaryType).toBe("RegisterTreasury");
    expect(s.types.RegisterTreasury.map((f) => `${f.type} ${f.name}`)).toEqual([
      "string service",
      "address wallet",
      "string chain",
      "string executionMode",
      "string nonce",
      "string issuedAt",
    ]);
    expect(s.message).toEqual({ service: facts.service, wallet, chain: "base", executionMode: "wallet", nonce: facts.nonce, issuedAt: facts.issuedAt });
  });

  it("AttachDelegation carries treasury, Safe, module and thresholds as integers", () => {
    const s = delegationStatement({
      service: "s",
      chain: "arbitrum",
      treasuryId: "trs_1",
      safe: wallet,
      module: wallet,
      protectBelowHealthCentis: 130,
      parkTargetBps: 2500,
      maxSlippageBps: 100,
      nonce: "n",
      issuedAt: "t",
    });
    expect(s.primaryType).toBe("AttachDelegation");
    expect(s.domain.chainId).toBe(42161);
    expect(s.types.AttachDelegation.map((f) => `${f.type} ${f.name}`)).toEqual([
      "string service",
      "string treasuryId",
      "address safe",
      "address module",
      "uint256 protectBelowHealthCentis",
      "uint256 parkTargetBps",
      "uint256 maxSlippageBps",
      "string nonce",
      "string issuedAt",
    ]);
    expect(s.message).toEqual({
      service: "s",
      treasuryId: "trs_1",
      safe: wallet,
      module: wallet,
      protectBelowHealthCentis: 130n,
      parkTargetBps: 2500n,
      maxSlippageBps: 100n,
      nonce: "n",
      issuedAt: "t",
    });
  });

  it("every fact changes the hash a wallet signs, and a wallet's signature recovers to it", async () => {
    const h = statementHash(registrationStatement(facts));
    expect(h).toBe(hashTypedData(registrationStatement(facts) as never));
    for (const change of [
      { service: "https://other.example" },
      { chain: "arbitrum" as const },
      { executionMode: "managed" as const },
      { nonce: "nonce-0123456789ac" },
      { issuedAt: "2026-11-22T00:00:01.000Z" },
    ]) {
      expect(statementHash(registrationStatement({ ...facts, ...change }))).not.toBe(h);
    }
    const account = privateKeyToAccount(generatePrivateKey());
    const signed = await account.signTypedData(registrationStatement({ ...facts, wallet: account.address }));
    const { recoverTypedDataAddress } = await import("viem");
    expect(await recoverTypedDataAddress({ ...(registrationStatement({ ...facts, wallet: account.address }) as object), signature: signed } as never)).toBe(
      account.address,
    );
  });

  it("a Safe's message wraps the statement hash in the Safe's own domain", () => {
    const hash = `0x${"ab".repeat(32)}` as const;
    expect(safeMessageFor(wallet, 8453, hash)).toEqual({
      domain: { chainId: 8453, verifyingContract: wallet },
      types: { SafeMessage: [{ name: "message", type: "bytes" }] },
      primaryType: "SafeMessage",
      message: { message: hash },
    });
  });

  it("a statement is fresh for 600 seconds, a minute of skew into the future, and must be ISO 8601", () => {
    const now = new Date("2026-11-22T12:00:00.000Z");
    expect(STATEMENT_MAX_AGE_SECONDS).toBe(600);
    expect(statementTimeProblem("2026-11-22T12:00:00.000Z", now)).toBeNull();
    expect(statementTimeProblem("2026-11-22T11:50:00.000Z", now)).toBeNull();
    expect(statementTimeProblem("2026-11-22T11:49:59.999Z", now)).toBe("the statement is older than 600 seconds; sign a fresh one");
    expect(statementTimeProblem("2026-11-22T12:01:00.000Z", now)).toBeNull();
    expect(statementTimeProblem("2026-11-22T12:01:00.001Z", now)).toBe("issued_at is in the future");
    expect(statementTimeProblem("yesterday", now)).toBe("issued_at must be an ISO 8601 timestamp");
    expect(statementTimeProblem("1763812800000", now)).toBe("issued_at must be an ISO 8601 timestamp");
    expect(STATEMENT_NONCE_PATTERN.test("a".repeat(16))).toBe(true);
    expect(STATEMENT_NONCE_PATTERN.test("a".repeat(15))).toBe(false);
    expect(STATEMENT_NONCE_PATTERN.test("a".repeat(129))).toBe(false);
    expect(STATEMENT_NONCE_PATTERN.test(`${"a".repeat(16)} `)).toBe(false);
  });
});
