/** Payers this service was paid by: kept for a while once known, asked of the store otherwise. */
import { describe, expect, it } from "vitest";
import { KnownPayers } from "./known-payers";

describe("KnownPayers", () => {
  it("asks the store for an unknown payer, keeps a known one (any letter case) until it expires", async () => {
    const asked: string[] = [];
    const known = new KnownPayers(async (payer) => (asked.push(payer), payer.toLowerCase() === "0xpaid"), 1_000);
    expect(await known.has("0xPaid", 0)).toBe(true);
    expect(await known.has("0xpaid", 500)).toBe(true);
    expect(await known.has("0xOther", 500)).toBe(false);
    expect(await known.has("0xOther", 600)).toBe(false);
    expect(await known.has("0xPAID", 1_001)).toBe(true);
    expect(asked).toEqual(["0xPaid", "0xOther", "0xOther", "0xPAID"]);
  });

  it("keeps at most `max` payers, the oldest dropped first", async () => {
    const known = new KnownPayers(async () => false, 10_000, 2);
    for (const p of ["0xa", "0xb", "0xc"]) known.add(p, 0);
    expect([await known.has("0xa", 1), await known.has("0xb", 1), await known.has("0xc", 1)]).toEqual([false, true, true]);
  });
});
