import type { Db } from "./db";

export type AccessRequestStatus = "received" | "in_review" | "closed";
export type AccessOutcome = "approved" | "declined";

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

interface Row {
  id: string;
  status: AccessRequestStatus;
  operator_name: string;
  operator_email: string;
  use_case: string;
  agent_name: string | null;
  agent_framework: string | null;
  company: string | null;
  wallet_address: string | null;
  chain: string | null;
  expected_monthly_volume_usdc: string | null;
  submitted_at: string;
  updated_at: string;
  reviewer: string | null;
  outcome: AccessOutcome | null;
  outcome_note: string | null;
  closed_at: string | null;
}

const fromRow = (r: Row): AccessRequestRecord => ({
  id: r.id,
  status: r.status,
  operatorName: r.operator_name,
  operatorEmail: r.operator_email,
  useCase: r.use_case,
  agentName: r.agent_name,
  agentFramework: r.agent_framework,
  company: r.company,
  walletAddress: r.wallet_address,
  chain: r.chain,
  expectedMonthlyVolumeUsdc: r.expected_monthly_volume_usdc,
  submittedAt: r.submitted_at,
  updatedAt: r.updated_at,
  reviewer: r.reviewer,
  outcome: r.outcome,
  outcomeNote: r.outcome_note,
  closedAt: r.closed_at,
});

export interface AccessRequestEvent {
  fromStatus: AccessRequestStatus | null;
  toStatus: AccessRequestStatus;
  actor: string;
  note: string | null;
  at: string;
}

export class AccessRequestStore {
  constructor(private readonly db: Db) {}

  insert(r: AccessRequestRecord, actor: string): void {
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO access_requests (id, status, operator_name, operator_email, use_case, agent_name, agent_framework, company, wallet_address, chain,
             expected_monthly_volume_usdc, submitted_at, updated_at, reviewer, outcome, outcome_note, closed_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          r.id, r.status, r.operatorName, r.operatorEmail, r.useCase, r.agentName, r.agentFramework, r.company, r.walletAddress, r.chain,
          r.expectedMonthlyVolumeUsdc, r.submittedAt, r.updatedAt, r.reviewer, r.outcome, r.outcomeNote, r.closedAt,
        );
      this.addEvent(r.id, { fromStatus: null, toStatus: r.status, actor, note: null, at: r.submittedAt });
    })();
  }

  get(id: string): AccessRequestRecord | undefined {
    const row = this.db.prepare("SELECT * FROM access_requests WHERE id = ?").get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  list(status?: AccessRequestStatus): AccessRequestRecord[] {
    const rows = status
      ? this.db.prepare("SELECT * FROM access_requests WHERE status = ? ORDER BY submitted_at").all(status)
      : this.db.prepare("SELECT * FROM access_requests ORDER BY submitted_at").all();
    return (rows as Row[]).map(fromRow);
  }

  /**
   * Move a request from `from` to `to` only if it is still in `from`
   * (compare-and-set, so two reviewers cannot both move it). Returns false
   * when the request was not in `from`.
   */
  transition(
    id: string,
    from: AccessRequestStatus,
    to: AccessRequestStatus,
    fields: { reviewer: string; outcome?: AccessOutcome; outcomeNote?: string | null; closedAt?: string },
    at: string,
  ): boolean {
    const info = this.db
      .prepare(
        `UPDATE access_requests SET status = ?, updated_at = ?, reviewer = ?, outcome = COALESCE(?, outcome),
           outcome_note = COALESCE(?, outcome_note), closed_at = COALESCE(?, closed_at)
         WHERE id = ? AND status = ?`,
      )
      .run(to, at, fields.reviewer, fields.outcome ?? null, fields.outcomeNote ?? null, fields.closedAt ?? null, id, from);
    if (info.changes !== 1) return false;
    this.addEvent(id, { fromStatus: from, toStatus: to, actor: fields.reviewer, note: fields.outcomeNote ?? null, at });
    return true;
  }

  events(id: string): AccessRequestEvent[] {
    return (
      this.db
        .prepare("SELECT from_status, to_status, actor, note, at FROM access_request_events WHERE access_request_id = ? ORDER BY seq")
        .all(id) as { from_status: AccessRequestStatus | null; to_status: AccessRequestStatus; actor: string; note: string | null; at: string }[]
    ).map((e) => ({ fromStatus: e.from_status, toStatus: e.to_status, actor: e.actor, note: e.note, at: e.at }));
  }

  private addEvent(id: string, e: AccessRequestEvent): void {
    this.db
      .prepare("INSERT INTO access_request_events (access_request_id, from_status, to_status, actor, note, at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(id, e.fromStatus, e.toStatus, e.actor, e.note, e.at);
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
