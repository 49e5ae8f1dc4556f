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

const sampleOf: (raw: unknown) => PositionSample = rowReader(positionSamples, { pick: ["at", "ltv", "health_score", "collateral_micro", "debt_micro"] });

export class PositionSampleStore {
  constructor(private readonly db: Db) {}

  /** record a sample unless one was taken recently and the LTV has not moved; true when written */
  async sample(treasuryId: string, s: PositionSample): Promise<boolean> {
    const last = await this.db.get<{ at: string; ltv: number }>(
      "SELECT at, ltv FROM position_samples WHERE treasury_id = ? ORDER BY at DESC LIMIT 1",
      treasuryId,
    );
    if (last && Date.parse(s.at) - Date.parse(last.at) < SAMPLE_EVERY_MS && Math.abs(s.ltv - last.ltv) < SAMPLE_LTV_STEP) return false;
    if (last && last.at >= s.at) return false;
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
