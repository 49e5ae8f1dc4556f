/** A settlement judged (settled, failed: nothing charged, unknown: maybe charged), and a pending one settled again. */
import { describe, expect, it } from "vitest";
import { SettleError, type PaymentPayload, type PaymentRequirements, type SettleResponse } from "x402/types";
import type { FacilitatorClient } from "./facilitator-client";
import { KnownPayers } from "./known-payers";
import { reasonCode, settleOnce, settlePending, settlementUnknown } from "./settlement";

const facilitator = (answer: () => Promise<Partial<SettleResponse>>) => ({ settle: answer }) as unknown as FacilitatorClient;
const payment = {} as PaymentPayload;
const requirements = {} as PaymentRequirements;

describe("settlement", () => {
  it("settled, failed with the facilitator's reason code, or unknown when it did not answer", async () => {
    expect(
      await settleOnce(
        facilitator(async () => ({ success: true, transaction: "0xt" })),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "settled", transaction: "0xt" });
    expect(
      await settleOnce(
        facilitator(async () => ({ success: false, errorReason: "insufficient_funds: node says no" as never })),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "failed", reason: "insufficient_funds" });
    const refused = new SettleError(400, { success: false, errorReason: "invalid_scheme" } as SettleResponse);
    expect(
      await settleOnce(
        facilitator(async () => Promise.reject(refused)),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "failed", reason: "invalid_scheme" });
    expect(
      await settleOnce(
        facilitator(async () => Promise.reject(new SettleError(502, { success: false } as SettleResponse))),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "unknown" });
    expect(
      await settleOnce(
        facilitator(async () => Promise.reject(new Error("timeout"))),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "unknown" });
  });

  it("a settlement whose receipt wait failed (the official schemes' settlement_pending) is unknown, never failed: its transaction may be mined", async () => {
    // the answer of @x402/evm's waitAndReturnSettleResponse when waitForTransactionReceipt throws (a session's deposit, say)
    const pending = { success: false, errorReason: "settlement_pending" as never, errorMessage: "timed out", transaction: "0xdeposit" };
    expect(
      await settleOnce(
        facilitator(async () => pending),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "unknown" });
    const refusedPending = new SettleError(400, pending as unknown as SettleResponse);
    expect(
      await settleOnce(
        facilitator(async () => Promise.reject(refusedPending)),
        payment,
        requirements,
      ),
    ).toEqual({ kind: "unknown" });
  });

  it("a reason is reduced to its code; an unknown settlement is a 503 with Retry-After", () => {
    expect([reasonCode("invalid_transaction_state: reverted"), reasonCode("Some Words"), reasonCode(undefined)]).toEqual([
      "invalid_transaction_state",
      undefined,
      undefined,
    ]);
    expect(settlementUnknown("0xp")).toMatchObject({
      code: "payment_settlement_unknown",
      fields: { payer: "0xp", retry_after_seconds: 2 },
      headers: { "Retry-After": "2" },
    });
  });

  it("a pending settlement is settled again and recorded; one not pending is settled already", async () => {
    const log: unknown[][] = [];
    const payments = {
      pendingSettlement: async (_payer: string, nonce: string) =>
        nonce === "0xpending" ? { settlement: JSON.stringify({ payment, requirements }), treasuryId: "trs_1" } : undefined,
      settled: async (...args: unknown[]) => void log.push(["settled", ...args.slice(0, 4)]),
      settlementFailed: async (...args: unknown[]) => void log.push(["failed", ...args]),
    };
    const ctx = { clock: { now: () => new Date(0) }, stores: { payments } } as never;
    const known = new KnownPayers(async () => false);
    expect(
      await settlePending(
        ctx,
        facilitator(async () => ({ success: true, transaction: "0xt" })),
        known,
        { payer: "0xP", nonce: "0xdone" },
      ),
    ).toBe("settled");
    expect(
      await settlePending(
        ctx,
        facilitator(async () => ({ success: true, transaction: "0xt" })),
        known,
        { payer: "0xP", nonce: "0xpending" },
      ),
    ).toBe("settled");
    expect(await known.has("0xp")).toBe(true);
    expect(
      await settlePending(
        ctx,
        facilitator(async () => ({ success: false, errorReason: "x" as never })),
        known,
        { payer: "0xP", nonce: "0xpending" },
      ),
    ).toBe("failed");
    expect(
      await settlePending(
        ctx,
        facilitator(async () => Promise.reject(new Error("down"))),
        known,
        { payer: "0xP", nonce: "0xpending" },
      ),
    ).toBe("unknown");
    expect(log).toEqual([
      ["settled", "0xP", "0xpending", "0xt", "trs_1"],
      ["failed", "0xP", "0xpending"],
    ]);
  });
});
