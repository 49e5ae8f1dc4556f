/** The signer's daily cap and x402 budget over a real audit log, to the micro-USDC. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AuditLog } from "./audit-log";
import { CapExceeded, SpendingCaps } from "./caps";

const freshLog = () => new AuditLog(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "caps-")), "audit.jsonl"));

describe("the daily signing cap", () => {
  it("counts what was signed today: a cap of 150 takes one 100 USDC signature, not a second", () => {
    const audit = freshLog();
    const caps = new SpendingCaps(audit);
    caps.reserveSigning(100_000_000n, 150_000_000n)();
    audit.append({ event: "signed", amount_micro: "100000000" });
    expect(() => caps.reserveSigning(100_000_000n, 150_000_000n)).toThrow(CapExceeded);
    expect(() => caps.reserveSigning(100_000_000n, 150_000_000n)).toThrow("100 USDC would exceed the daily cap of 150 (signed or being signed today: 100)");
    expect(() => caps.reserveSigning(100_000_000n, 150_000_000n)).toThrow(expect.objectContaining({ name: "CapExceeded", code: "cap_exceeded" }));
    // exactly up to the cap is allowed
    expect(() => caps.reserveSigning(50_000_000n, 150_000_000n)).not.toThrow();
  });

  it("counts what is being signed: reservations block until released, once", () => {
    const caps = new SpendingCaps(freshLog());
    const a = caps.reserveSigning(100_000_000n, 250_000_000n);
    const b = caps.reserveSigning(100_000_000n, 250_000_000n);
    expect(() => caps.reserveSigning(100_000_000n, 250_000_000n)).toThrow("(signed or being signed today: 200)");
    a();
    a(); // a second release frees nothing more
    expect(() => caps.reserveSigning(100_000_000n, 250_000_000n)).not.toThrow();
    expect(() => caps.reserveSigning(50_000_001n, 250_000_000n)).toThrow(CapExceeded);
    b();
  });

  it("ignores other days and other events", () => {
    const audit = freshLog();
    fs.appendFileSync(audit.file, `${JSON.stringify({ at: "2000-01-01T00:00:00.000Z", event: "signed", amount_micro: "999000000" })}\n`);
    audit.append({ event: "refused", amount_micro: "999000000" });
    audit.append({ event: "x402_payment", amount_micro: "999000000" });
    expect(() => new SpendingCaps(audit).reserveSigning(150_000_000n, 150_000_000n)).not.toThrow();
    expect(audit.todayMicro("signed")).toBe(0n);
  });
});

describe("the x402 price cap and daily budget", () => {
  it("refuses a price above the cap and a payment past today's budget, exactly", () => {
    const audit = freshLog();
    const caps = new SpendingCaps(audit);
    expect(caps.x402Refusal(100_000n, 100_000n, 5_000_000n)).toBeNull();
    expect(caps.x402Refusal(100_001n, 100_000n, 5_000_000n)).toBe("x402 price 0.100001 USDC is above the policy cap of 0.1");
    audit.append({ event: "x402_payment", amount_micro: "4950000" });
    expect(caps.x402Refusal(50_000n, 100_000n, 5_000_000n)).toBeNull();
    expect(caps.x402Refusal(50_001n, 100_000n, 5_000_000n)).toBe("paying 0.050001 USDC would exceed today's x402 budget of 5 (spent 4.95)");
  });
});

describe("what is left of today's x402 budget (a session's deposit stays within it)", () => {
  it("is the budget less today's payments, exactly, and never below zero", () => {
    const audit = freshLog();
    const caps = new SpendingCaps(audit);
    expect(caps.x402Left(5_000_000n)).toBe(5_000_000n);
    audit.append({ event: "x402_payment", amount_micro: "4999999" });
    expect(caps.x402Left(5_000_000n)).toBe(1n);
    audit.append({ event: "x402_payment", amount_micro: "1" });
    expect(caps.x402Left(5_000_000n)).toBe(0n);
    audit.append({ event: "x402_payment", amount_micro: "7" });
    expect(caps.x402Left(5_000_000n)).toBe(0n);
  });
});
