import type { Db } from "./db";
import { rowReader, type RowOf } from "./schema/table";
import { accessRequestEvents, accessRequests } from "./schema/tables/treasury";

export type AccessRequestStatus = RowOf<typeof accessRequests>["status"];
export type AccessOutcome = NonNullable<RowOf<typeof accessRequests>["outcome"]>;

export interface AccessRequestRecord {
  id: string;
  status: AccessRequestStatus;
  operatorName: string;
  operatorEmail: string;
  useCase: string;
  agentName: string | null;
  agentFramework: string | null;
  company: string | null;
  walletAddress: string | null;
  chain: string | null;
  expectedMonthlyVolumeUsdc: string | null;
  submittedAt: string;
  updatedAt: string;
  reviewer: string | null;
  outcome: AccessOutcome | null;
  outcomeNote: string | null;
  closedAt: string | null;
}

export interface AccessRequestEvent {
  fromStatus: AccessRequestStatus | null;
  toStatus: AccessRequestStatus;
  actor: string;
  note: string | null;
  at: string;
}

const fromRow: (raw: unknown) => AccessRequestRecord = rowReader(accessRequests);
const eventOf: (raw: unknown) => AccessRequestEvent = rowReader(accessRequestEvents, { pick: ["from_status", "to_status", "actor", "note", "at"] });

export class AccessRequestStore {
  constructor(private readonly db: Db) {}

  async insert(r: AccessRequestRecord, actor: string): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run(
        `INSERT INTO access_requests (id, status, operator_name, operator_email, use_case, agent_name, agent_framework, company, wallet_address, chain,
             expected_monthly_volume_usdc, submitted_at, updated_at, reviewer, outcome, outcome_note, closed_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        r.id,
        r.status,
        r.operatorName,
        r.operatorEmail,
        r.useCase,
        r.agentName,
        r.agentFramework,
        r.company,
        r.walletAddress,
        r.chain,
        r.expectedMonthlyVolumeUsdc,
        r.submittedAt,
        r.updatedAt,
        r.reviewer,
        r.outcome,
        r.outcomeNote,
        r.closedAt,
      );
      await this.addEvent(r.id, { fromStatus: null, toStatus: r.status, actor, note: null, at: r.submittedAt });
    });
  }

  async get(id: string): Promise<AccessRequestRecord | undefined> {
    const row = await this.db.get("SELECT * FROM access_requests WHERE id = ?", id);
    return row ? fromRow(row) : undefined;
  }

  async list(status?: AccessRequestStatus): Promise<AccessRequestRecord[]> {
    const rows = status
      ? await this.db.all("SELECT * FROM access_requests WHERE status = ? ORDER BY submitted_at", status)
      : await this.db.all("SELECT * FROM access_requests ORDER BY submitted_at");
    return rows.map(fromRow);
  }

  /**
   * Move a request from `from` to `to` only if it is still in `from`
   * (compare-and-set, so two reviewers cannot both move it). Returns false
   * when the request was not in `from`.
   */
  async transition(
    id: string,
    from: AccessRequestStatus,
    to: AccessRequestStatus,
    fields: { reviewer: string; outcome?: AccessOutcome; outcomeNote?: string | null; closedAt?: string },
    at: string,
  ): Promise<boolean> {
    const info = await this.db.run(
      `UPDATE access_requests SET status = ?, updated_at = ?, reviewer = ?, outcome = COALESCE(?, outcome),
           outcome_note = COALESCE(?, outcome_note), closed_at = COALESCE(?, closed_at)
         WHERE id = ? AND status = ?`,
      to,
      at,
      fields.reviewer,
      fields.outcome ?? null,
      fields.outcomeNote ?? null,
      fields.closedAt ?? null,
      id,
      from,
    );
    if (info.changes !== 1) return false;
    await this.addEvent(id, { fromStatus: from, toStatus: to, actor: fields.reviewer, note: fields.outcomeNote ?? null, at });
    return true;
  }

  async events(id: string): Promise<AccessRequestEvent[]> {
    return (await this.db.all("SELECT from_status, to_status, actor, note, at FROM access_request_events WHERE access_request_id = ? ORDER BY seq", id)).map(
      eventOf,
    );
  }

  private async addEvent(id: string, e: AccessRequestEvent): Promise<void> {
    await this.db.run(
      "INSERT INTO access_request_events (access_request_id, from_status, to_status, actor, note, at) VALUES (?, ?, ?, ?, ?, ?)",
      id,
      e.fromStatus,
      e.toStatus,
      e.actor,
      e.note,
      e.at,
    );
  }
}
