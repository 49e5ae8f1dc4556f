/**
 * x402 session channels (`batch-settlement`) and their redemptions. A voucher is charged by one conditional
 * UPDATE: `charged` moves from exactly the amount before it to the voucher's cumulative amount, so two
 * requests (on one instance or several) never charge the same increment, and a voucher is never counted
 * twice. A redemption is recorded before it is sent; the channels it claims are held under a lease.
 */
import { formatDecimal } from "@treasury/core/domain/money";
import type { EventStore } from "./event-store";
import type { Db } from "./db";
import { leaseLapsed } from "./instance-store";
import { leaseUntil } from "./lease";
import { rowReader, type RowOf } from "./schema/table";
import { x402Channels, x402Redemptions } from "./schema/tables/sessions";

export type ChannelRecord = RowOf<typeof x402Channels>;
export type RedemptionRecord = RowOf<typeof x402Redemptions>;
const fromRow: (raw: unknown) => ChannelRecord = rowReader(x402Channels);
const redemptionOf: (raw: unknown) => RedemptionRecord = rowReader(x402Redemptions);

/** what the chain said of a channel (read through the facilitator) */
export interface ChainChannel {
  balance: bigint;
  totalClaimed: bigint;
  withdrawRequestedAt: number;
}

export type ChargeOutcome = { kind: "charged"; channel: ChannelRecord } | { kind: "stale"; channel: ChannelRecord | undefined } | { kind: "over_balance" };

/** a voucher's payment, recorded with its charge (x402_payments: one row per payer and `session:<channel>:<amount>`) */
export interface VoucherPayment {
  payer: string;
  nonce: string;
  route: string;
  amountAtomic: bigint;
  treasuryId: string;
  /** what the settlement header names: the channel and cumulative amount */
  transaction: string;
  /** the answer's status when the charge is the request's outcome too (a paid read); else the row is leased to `holder` until the outcome */
  status?: number;
  holder: string;
}

/** a charge rolled back: its payment was recorded already (a replay, or a concurrent request with the same voucher) */
class PaymentTaken extends Error {}
/** a charge rolled back: the voucher's amount is above the channel's balance */
class OverBalance extends Error {}

/** the holder of a channel set aside after its claim failed (holdBack) */
const HELD = "held";

/** a voucher's charge: the channel's `charged` moved from the voucher's base (a conditional UPDATE: one request moves it) */
const CHARGE_VOUCHER = `UPDATE x402_channels SET charged = ?, voucher_signature = ?, vouchers_unredeemed = vouchers_unredeemed + 1,
  first_unredeemed_at = COALESCE(first_unredeemed_at, ?), updated_at = ?
  WHERE channel_id = ? AND charged = ?`;

export class ChannelStore {
  constructor(
    private readonly db: Db,
    /** the treasuries' event logs: a redemption and a withdrawal started are told to the payer's treasuries */
    private readonly events?: EventStore,
  ) {}

  /** the treasuries a payer's wallet stands behind (a session's events go to each) */
  private async treasuriesOf(payer: string): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>("SELECT id FROM treasuries WHERE lower(wallet_address) = ?", payer.toLowerCase());
    return rows.map((r) => r.id);
  }

  async get(channelId: string): Promise<ChannelRecord | undefined> {
    const raw = await this.db.get("SELECT * FROM x402_channels WHERE channel_id = ?", channelId.toLowerCase());
    return raw ? fromRow(raw) : undefined;
  }

  /** a channel first seen (its deposit settled), or its on-chain state read again */
  async sync(c: { channelId: string; payer: string; config: Record<string, unknown> }, chain: ChainChannel, now: Date): Promise<void> {
    await this.db.transaction(async () => {
      const before = await this.get(c.channelId);
      await this.upsert(c, chain, now);
      // the payer started withdrawing its deposit (seen on chain for the first time): its treasuries' event
      if (this.events && chain.withdrawRequestedAt > 0 && (before?.withdrawRequestedAt ?? 0) === 0) {
        const delay = Number(c.config.withdrawDelay); // the channel config's withdrawal delay, in seconds
        const withdrawableAt = Number.isFinite(delay) ? new Date((chain.withdrawRequestedAt + delay) * 1000).toISOString() : null;
        for (const t of await this.treasuriesOf(c.payer))
          await this.events.append(t, "session.withdrawal_started", { channel_id: c.channelId.toLowerCase(), withdrawable_at: withdrawableAt }, { now });
      }
    });
  }

  private async upsert(c: { channelId: string; payer: string; config: Record<string, unknown> }, chain: ChainChannel, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.db.run(
      `INSERT INTO x402_channels (channel_id, payer, config, balance, total_claimed, charged, withdraw_requested_at, synced_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (channel_id) DO UPDATE SET balance = excluded.balance, total_claimed = excluded.total_claimed,
         withdraw_requested_at = excluded.withdraw_requested_at, synced_at = excluded.synced_at, updated_at = excluded.updated_at`,
      c.channelId.toLowerCase(),
      c.payer.toLowerCase(),
      JSON.stringify(c.config),
      chain.balance.toString(),
      chain.totalClaimed.toString(),
      // a channel this service never charged starts where the chain's claims are
      chain.totalClaimed.toString(),
      chain.withdrawRequestedAt,
      at,
      at,
      at,
    );
  }

  /**
   * Charge a voucher: `charged` moves from `from` to `to` (the voucher's cumulative amount) with its signature,
   * only if nothing else moved it and `to` is within the channel's balance. One transaction.
   */
  charge(channelId: string, v: { from: bigint; to: bigint; signature: string }, now: Date): Promise<ChargeOutcome> {
    const id = channelId.toLowerCase();
    return this.db.transaction(async (): Promise<ChargeOutcome> => {
      const channel = await this.get(id);
      if (!channel || channel.charged !== v.from) return { kind: "stale", channel };
      if (v.to > channel.balance) return { kind: "over_balance" };
      const at = now.toISOString();
      const moved = await this.db.run(CHARGE_VOUCHER, v.to.toString(), v.signature, at, at, id, v.from.toString());
      if (moved.changes !== 1) return { kind: "stale", channel: await this.get(id) };
      return { kind: "charged", channel: { ...channel, charged: v.to, voucherSignature: v.signature } };
    });
  }

  /**
   * Charge a voucher and record its payment, settled, in ONE transaction: the channel's `charged` moves from
   * `from` to `to` (a conditional UPDATE), and the payment's row is inserted (its primary key refuses a second
   * one), with the request's outcome when it is known (a paid read's answer), else leased to its holder until
   * the outcome. Either both are written or neither: `stale` (another request moved the channel),
   * `over_balance`, or `used` (the payment's row exists: a replay).
   */
  chargeVoucher(
    channelId: string,
    v: { from: bigint; to: bigint; signature: string },
    p: VoucherPayment,
    now: Date,
  ): Promise<ChargeOutcome | { kind: "used" }> {
    const id = channelId.toLowerCase();
    const at = now.toISOString();
    return this.db
      .transaction(async (): Promise<ChargeOutcome> => {
        const raw = await this.db.get(`${CHARGE_VOUCHER} RETURNING *`, v.to.toString(), v.signature, at, at, id, v.from.toString());
        if (!raw) return { kind: "stale", channel: await this.get(id) };
        const channel = fromRow(raw);
        if (v.to > channel.balance) throw new OverBalance();
        const answered = p.status !== undefined;
        const inserted = await this.db.run(
          `INSERT INTO x402_payments (payer, nonce, route, amount_atomic, state, treasury_id, transaction_hash, created_at, settled_at, outcome_status, lease_holder, lease_expires_at)
           VALUES (?, ?, ?, ?, 'settled', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
          p.payer.toLowerCase(),
          p.nonce.toLowerCase(),
          p.route,
          p.amountAtomic.toString(),
          p.treasuryId,
          p.transaction,
          at,
          at,
          answered ? p.status! : null,
          answered ? null : p.holder,
          answered ? null : leaseUntil(now),
        );
        if (inserted.changes !== 1) throw new PaymentTaken();
        return { kind: "charged", channel };
      })
      .catch((err: unknown) => {
        if (err instanceof PaymentTaken) return { kind: "used" as const };
        if (err instanceof OverBalance) return { kind: "over_balance" as const };
        throw err;
      });
  }

  /** what the unredeemed vouchers add up to, across channels: the batch policy's measures */
  async unredeemed(): Promise<{ vouchers: number; amount: bigint; oldest: string | null; withdrawing: boolean }> {
    const rows = (await this.db.all("SELECT * FROM x402_channels WHERE vouchers_unredeemed > 0")).map(fromRow);
    return {
      vouchers: rows.reduce((n, r) => n + r.vouchersUnredeemed, 0),
      amount: rows.reduce((a, r) => a + (r.charged - r.totalClaimed), 0n),
      oldest: rows.reduce<string | null>((o, r) => (r.firstUnredeemedAt !== null && (o === null || r.firstUnredeemedAt < o) ? r.firstUnredeemedAt : o), null),
      withdrawing: rows.some((r) => r.withdrawRequestedAt > 0),
    };
  }

  /**
   * Lease the channels with unredeemed vouchers (at most `limit`) to `holder`: each channel's lease is taken in
   * its own conditional UPDATE, so two redeemers never claim one channel at once. A channel held back (its own
   * claim refused, holdBack) is no candidate until its hold ends: held-back channels never fill a batch and
   * stall the others. The leased channels, as read.
   */
  async leaseUnredeemed(holder: string, limit: number, now: Date, ms: number): Promise<ChannelRecord[]> {
    const candidates = (
      await this.db.all(
        `SELECT * FROM x402_channels WHERE vouchers_unredeemed > 0 AND (redeem_holder IS NULL OR redeem_holder <> '${HELD}' OR redeem_until <= ?)
         ORDER BY first_unredeemed_at LIMIT ?`,
        now.toISOString(),
        limit,
      )
    ).map(fromRow);
    const leased: ChannelRecord[] = [];
    for (const c of candidates) {
      if (c.redeemHolder !== null && !(await leaseLapsed(this.db, { endsAt: c.redeemUntil, holder: c.redeemHolder }, now))) continue;
      const taken = await this.db.run(
        "UPDATE x402_channels SET redeem_holder = ?, redeem_until = ? WHERE channel_id = ? AND redeem_holder IS NOT DISTINCT FROM ?",
        holder,
        leaseUntil(now, ms),
        c.channelId,
        c.redeemHolder,
      );
      if (taken.changes === 1) leased.push((await this.get(c.channelId))!);
    }
    return leased;
  }

  /**
   * The chain has claimed `claimed` on this channel: what was charged up to it is redeemed. Vouchers charged
   * after the lease was taken (`counted` were counted then) stay unredeemed.
   */
  async redeemed(channelId: string, holder: string, claimed: bigint, counted: number, now: Date, transaction?: string): Promise<void> {
    const at = now.toISOString();
    await this.db.transaction(async () => {
      const c = await this.get(channelId);
      if (!c) return;
      const rest = c.charged > claimed ? Math.max(c.vouchersUnredeemed - counted, 1) : 0;
      const changed = await this.db.run(
        `UPDATE x402_channels SET total_claimed = ?, vouchers_unredeemed = ?, first_unredeemed_at = ?, updated_at = ?,
           redeem_holder = NULL, redeem_until = NULL WHERE channel_id = ? AND redeem_holder = ?`,
        (claimed > c.totalClaimed ? claimed : c.totalClaimed).toString(),
        rest,
        rest > 0 ? at : null,
        at,
        c.channelId,
        holder,
      );
      // what the chain paid out of this channel: the payer's treasuries' event, with the redemption's transaction
      if (this.events && changed.changes === 1 && claimed > c.totalClaimed) {
        for (const t of await this.treasuriesOf(c.payer))
          await this.events.append(
            t,
            "session.redeemed",
            { channel_id: c.channelId, amount_usdc: formatDecimal(claimed - c.totalClaimed, 6), transaction: transaction ?? null },
            { now },
          );
      }
    });
  }

  /** a channel whose own claim failed: set aside (no redeemer leases it) until `until`, then tried again */
  async holdBack(channelId: string, holder: string, until: Date): Promise<void> {
    await this.db.run(
      `UPDATE x402_channels SET redeem_holder = '${HELD}', redeem_until = ? WHERE channel_id = ? AND redeem_holder = ?`,
      until.toISOString(),
      channelId,
      holder,
    );
  }

  /** give a leased channel back without redeeming it (the claim failed: the next round tries again) */
  async unlease(channelId: string, holder: string): Promise<void> {
    await this.db.run("UPDATE x402_channels SET redeem_holder = NULL, redeem_until = NULL WHERE channel_id = ? AND redeem_holder = ?", channelId, holder);
  }

  async recordRedemption(r: { id: string; holder: string; claims: { channel_id: string; amount: string }[]; amount: bigint }, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.db.run(
      "INSERT INTO x402_redemptions (id, holder, claims, vouchers, amount, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'claiming', ?, ?)",
      r.id,
      r.holder,
      JSON.stringify(r.claims),
      r.claims.length,
      r.amount.toString(),
      at,
      at,
    );
  }

  async redemptionState(id: string, state: "claimed" | "settled" | "failed", f: { claimTx?: string; settleTx?: string; reason?: string }, now: Date) {
    await this.db.run(
      "UPDATE x402_redemptions SET state = ?, claim_tx = COALESCE(?, claim_tx), settle_tx = COALESCE(?, settle_tx), reason = COALESCE(?, reason), updated_at = ? WHERE id = ?",
      state,
      f.claimTx ?? null,
      f.settleTx ?? null,
      f.reason ?? null,
      now.toISOString(),
      id,
    );
  }

  async redemptions(): Promise<RedemptionRecord[]> {
    return (await this.db.all("SELECT * FROM x402_redemptions ORDER BY created_at")).map(redemptionOf);
  }
}
