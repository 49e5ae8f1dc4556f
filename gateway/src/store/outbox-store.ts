/**
 * Messages to people (the operator's credentials, review outcomes). A
 * delivery worker sends them; `markDelivered` then scrubs the body so a
 * delivered secret does not stay in the database. Until then the body (which
 * may hold a live key) is stored sealed (AES-256-GCM, lib/secrets.ts), never
 * in clear.
 */
import type { SecretBox } from "../lib/secrets";
import type { Db } from "./db";
import { rowReader } from "./schema/table";
import { outbox } from "./schema/tables/treasury";

export interface OutboxMessage {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  body: string | null;
  relatedId: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

const read = rowReader(outbox);
/** the body is opened (it is stored sealed) */
const fromRow = (raw: unknown, box: SecretBox): OutboxMessage => {
  const m = read(raw);
  return { ...m, body: m.body === null ? null : box.open(m.body) };
};

export class OutboxStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  async insert(m: OutboxMessage): Promise<void> {
    await this.db.run(
      "INSERT INTO outbox (id, kind, recipient, subject, body, related_id, created_at, delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      m.id,
      m.kind,
      m.recipient,
      m.subject,
      m.body === null ? null : this.box.seal(m.body),
      m.relatedId,
      m.createdAt,
      m.deliveredAt,
    );
  }

  async pending(): Promise<OutboxMessage[]> {
    return (await this.db.all("SELECT * FROM outbox WHERE delivered_at IS NULL ORDER BY created_at")).map((r) => fromRow(r, this.box));
  }

  async forRelated(relatedId: string): Promise<OutboxMessage[]> {
    return (await this.db.all("SELECT * FROM outbox WHERE related_id = ? ORDER BY created_at", relatedId)).map((r) => fromRow(r, this.box));
  }

  async markDelivered(id: string, at: string): Promise<boolean> {
    return (await this.db.run("UPDATE outbox SET delivered_at = ?, body = NULL WHERE id = ? AND delivered_at IS NULL", at, id)).changes === 1;
  }
}
