/**
 * A treasury's Aave position over time (LTV and health score), written by the
 * protection engine as it reads each delegated Safe's position and by the Safe
 * executor after an execution: at most one sample per treasury every
 * SAMPLE_EVERY_MS unless the LTV moved by at least SAMPLE_LTV_STEP points, so
 * a steady position costs one row a minute and a move is seen at once. Old
 * samples go with the retention sweep.
 */
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { positionSamples } from "./schema/tables/protection";

export const SAMPLE_EVERY_MS = 60_000;
export const SAMPLE_LTV_STEP = 0.5;
/** at most this many points in one history answer */
export const HISTORY_MAX_POINTS = 500;

export interface PositionSample {
  at: string;
  ltv: number;
  healthScore: number;
  collateralMicro: bigint;
  debtMicro: bigint;
}

/** a sample of one treasury, as a pass writes many at once */
export type TreasurySample = PositionSample & { treasuryId: string };

/** how many treasuries' samples one statement reads or writes (6 parameters a row: far under either dialect's limit) */
const CHUNK = 500;

/** is `s` worth a row after the treasury's last sample `last`: none yet, a minute later, or the LTV moved (and never an earlier time) */
const due = (last: { at: string; ltv: number } | undefined, s: PositionSample): boolean =>
  !last || (last.at < s.at && (Date.parse(s.at) - Date.parse(last.at) >= SAMPLE_EVERY_MS || Math.abs(s.ltv - last.ltv) >= SAMPLE_LTV_STEP));

const chunks = <T>(xs: readonly T[]): T[][] => Array.from({ length: Math.ceil(xs.length / CHUNK) }, (_, i) => xs.slice(i * CHUNK, (i + 1) * CHUNK));
const marks = (n: number, one = "?"): string => Array.from({ length: n }, () => one).join(", ");

const sampleOf: (raw: unknown) => PositionSample = rowReader(positionSamples, { pick: ["at", "ltv", "health_score", "collateral_micro", "debt_micro"] });

export class PositionSampleStore {
  constructor(private readonly db: Db) {}

  /** record a sample unless one was taken recently and the LTV has not moved; true when written */
  async sample(treasuryId: string, s: PositionSample): Promise<boolean> {
    const last = await this.db.get<{ at: string; ltv: number }>(
      "SELECT at, ltv FROM position_samples WHERE treasury_id = ? ORDER BY at DESC LIMIT 1",
      treasuryId,
    );
    if (!due(last && { at: last.at, ltv: Number(last.ltv) }, s)) return false;
    await this.db.run(
      "INSERT INTO position_samples (treasury_id, at, ltv, health_score, collateral_micro, debt_micro) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
      treasuryId,
      s.at,
      s.ltv,
      s.healthScore,
      s.collateralMicro.toString(),
      s.debtMicro.toString(),
    );
    return true;
  }

  /**
   * A pass's samples in one transaction, each kept or not as `sample` would (in order, a treasury's earlier
   * row in `rows` counting as its last): the last sample of every treasury read in one query, the kept rows
   * written in one statement (per CHUNK treasuries). Whether each row was written, in the order given.
   */
  async sampleMany(rows: readonly TreasurySample[]): Promise<boolean[]> {
    if (rows.length === 0) return [];
    // a sample is a rate-limited record: READ COMMITTED is enough (a row raced in is kept once by the key)
    return this.db.transaction(
      async () => {
        const last = new Map<string, { at: string; ltv: number }>();
        for (const ids of chunks([...new Set(rows.map((r) => r.treasuryId))])) {
          const found = await this.db.all<{ treasury_id: string; at: string; ltv: number }>(
            `SELECT treasury_id, at, ltv FROM position_samples p WHERE treasury_id IN (${marks(ids.length)})
               AND at = (SELECT MAX(at) FROM position_samples q WHERE q.treasury_id = p.treasury_id)`,
            ...ids,
          );
          for (const f of found) last.set(f.treasury_id, { at: f.at, ltv: Number(f.ltv) });
        }
        const written = rows.map((r) => {
          if (!due(last.get(r.treasuryId), r)) return false;
          last.set(r.treasuryId, { at: r.at, ltv: r.ltv });
          return true;
        });
        for (const part of chunks(rows.filter((_, i) => written[i]))) {
          await this.db.run(
            `INSERT INTO position_samples (treasury_id, at, ltv, health_score, collateral_micro, debt_micro) VALUES ${marks(part.length, "(?, ?, ?, ?, ?, ?)")} ON CONFLICT DO NOTHING`,
            ...part.flatMap((s) => [s.treasuryId, s.at, s.ltv, s.healthScore, s.collateralMicro.toString(), s.debtMicro.toString()]),
          );
        }
        return written;
      },
      { isolation: "read committed" },
    );
  }

  /** the newest samples since `since` (oldest first), at most HISTORY_MAX_POINTS */
  async history(treasuryId: string, since: string): Promise<PositionSample[]> {
    const rows = await this.db.all(
      "SELECT at, ltv, health_score, collateral_micro, debt_micro FROM position_samples WHERE treasury_id = ? AND at >= ? ORDER BY at DESC LIMIT ?",
      treasuryId,
      since,
      HISTORY_MAX_POINTS,
    );
    return rows.reverse().map(sampleOf);
  }

  async purgeOlderThan(before: string): Promise<number> {
    return (await this.db.run("DELETE FROM position_samples WHERE at < ?", before)).changes;
  }
}
