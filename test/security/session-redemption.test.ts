/**
 * Redemption is not stalled by channels set aside: a channel whose own claim the chain refused is held back,
 * and a batch's candidates are chosen among the others, so MAX_CLAIMS_PER_BATCH channels held back (each a
 * claim that reverts, cheap to make: a payer withdrawing what it was charged) never keep every other
 * channel's vouchers from being redeemed. Run on the real store (SQLite, or PostgreSQL under TEST_STORE=postgres).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LEASE_MS, newHolder } from "../../gateway/src/store/lease";
import { MAX_CLAIMS_PER_BATCH, HOLD_BACK_MS } from "../../gateway/src/x402/schemes/session/redeemer";
import { startTestGateway, type TestGateway } from "../helpers/gateway";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
}, 60_000);
afterAll(() => gw.close());

const channelId = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const SIGNATURE = `0x${"11".repeat(65)}`;

describe("session redemption", () => {
  it("a full batch of held-back channels does not keep the next channel from being leased", async () => {
    const channels = gw.ctx.stores.channels;
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    // MAX_CLAIMS_PER_BATCH channels with vouchers charged first, then one more, charged last
    for (let n = 1; n <= MAX_CLAIMS_PER_BATCH + 1; n++) {
      const at = new Date(start + n * 1000);
      await channels.sync(
        { channelId: channelId(n), payer: "0x00000000000000000000000000000000000000aa", config: {} },
        { balance: 10_000n, totalClaimed: 0n, withdrawRequestedAt: 0 },
        at,
      );
      expect((await channels.charge(channelId(n), { from: 0n, to: 1_000n, signature: SIGNATURE }, at)).kind).toBe("charged");
    }
    const now = new Date(start + 3_600_000);
    // the oldest MAX_CLAIMS_PER_BATCH are leased and their claims refused: held back
    const first = newHolder("rdm");
    const leased = await channels.leaseUnredeemed(first, MAX_CLAIMS_PER_BATCH, now, LEASE_MS);
    expect(leased.map((c) => c.channelId)).not.toContain(channelId(MAX_CLAIMS_PER_BATCH + 1));
    for (const c of leased) await channels.holdBack(c.channelId, first, new Date(now.getTime() + HOLD_BACK_MS));
    // the next batch finds the one channel left
    const next = await channels.leaseUnredeemed(newHolder("rdm"), MAX_CLAIMS_PER_BATCH, now, LEASE_MS);
    expect(next.map((c) => c.channelId)).toEqual([channelId(MAX_CLAIMS_PER_BATCH + 1)]);
    // past the hold, the held-back channels are candidates again
    const later = await channels.leaseUnredeemed(newHolder("rdm"), MAX_CLAIMS_PER_BATCH, new Date(now.getTime() + HOLD_BACK_MS + 1), LEASE_MS);
    expect(later).toHaveLength(MAX_CLAIMS_PER_BATCH);
  });
});
