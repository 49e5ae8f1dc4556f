/**
 * What a treasury's records hold of its past: the receipts of its executions, its fee audit trail (paged,
 * oldest first, by a cursor of the audit's order) and the samples of its position over time.
 */
import { usdcToNumber } from "@treasury/core/domain/money";
import type { AuditPosition } from "../../store/fee-store";
import { AUDIT_PAGE } from "../../schemas/actions";
import type { ServiceContext } from "../context";

const HISTORY_DEFAULT_MS = 86_400_000;

export class TreasuryHistory {
  constructor(private readonly ctx: ServiceContext<"executions" | "fees" | "positionSamples">) {}

  /** the receipt of one of the treasury's executions, or undefined */
  receipt(treasuryId: string, id: string): Promise<Record<string, unknown> | undefined> {
    return this.ctx.stores.executions.receipt(treasuryId, id);
  }

  /** the fee audit trail (extension): a page, oldest first; the cursor is the position after which the page starts */
  async auditView(treasuryId: string, page: { limit?: number; cursor?: string } = {}) {
    const after = page.cursor === undefined ? undefined : auditPositionOf(page.cursor);
    const { entries, next } = await this.ctx.stores.fees.pageForTreasury(treasuryId, page.limit ?? AUDIT_PAGE.default, after);
    return {
      object: "list" as const,
      treasury_id: treasuryId,
      has_more: next !== undefined,
      next_cursor: next ? auditCursor(next) : null,
      data: entries.map((e) => ({
        id: e.id,
        action: e.action,
        amount_usdc: usdcToNumber(e.amountMicro),
        fee_usdc: usdcToNumber(e.feeMicro),
        fee_bps: e.feeBps,
        fee_basis: e.feeBasis,
        fee_tier: e.feeTier,
        fee_bearing: e.feeMicro > 0n,
        trigger: e.trigger,
        execution_ref: e.executionRef,
        created_at: e.createdAt,
      })),
    };
  }

  /** GET /api/v1/health/history (extension): the position's samples since `since` (default: 24 hours ago), oldest first */
  async healthHistory(treasuryId: string, since?: string) {
    const from = since ?? new Date(this.ctx.clock.now().getTime() - HISTORY_DEFAULT_MS).toISOString();
    const points = await this.ctx.stores.positionSamples.history(treasuryId, new Date(from).toISOString());
    return {
      object: "position_history",
      treasury_id: treasuryId,
      points: points.map((p) => ({
        at: p.at,
        ltv: p.ltv,
        health_score: p.healthScore,
        collateral_usd: usdcToNumber(p.collateralMicro),
        debt_usdc: usdcToNumber(p.debtMicro),
      })),
      note: "sampled by the protection engine for treasuries with a proven delegation, and after executed Safe transactions",
    };
  }
}

/** the cursor of an audit position: "<time in Unix milliseconds>-<insertion number>"; any such pair is a place in the order */
const auditCursor = (p: AuditPosition): string => `${Date.parse(p.createdAt)}-${p.position}`;

function auditPositionOf(cursor: string): AuditPosition {
  const [ms, position] = cursor.split("-");
  return { createdAt: new Date(Number(ms)).toISOString(), position: Number(position) };
}
