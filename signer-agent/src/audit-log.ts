/** Append-only audit log (JSON lines) of every signature given or refused, and every x402 payment. */
import fs from "node:fs";
import path from "node:path";

export interface AuditEvent {
  /**
   * executed: an envelope's every step relayed (its action, amount_micro, fee_micro, treasury_id); x402_payment: a
   * request paid (what was charged); x402_deposit: USDC put into an x402 session's channel (held there, not spent)
   */
  event: "signed" | "refused" | "x402_payment" | "x402_deposit" | "x402_refused" | "relayed" | "executed";
  reason?: string;
  tx_id?: string;
  chain_id?: number;
  to?: string;
  function?: string;
  amount_usdc?: number;
  /** exact amount, micro-USDC, as a decimal string */
  amount_micro?: string;
  tx_hash?: string;
  [k: string]: unknown;
}

export class AuditLog {
  constructor(readonly file: string) {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  }

  append(e: AuditEvent): void {
    fs.appendFileSync(this.file, `${JSON.stringify({ at: new Date().toISOString(), ...e })}\n`, { flag: "a" });
  }

  entries(): (AuditEvent & { at: string })[] {
    if (!fs.existsSync(this.file)) return [];
    return fs
      .readFileSync(this.file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent & { at: string });
  }

  /** exact sum (micro-USDC) of amount_micro over today's (UTC) events of a kind */
  todayMicro(event: AuditEvent["event"]): bigint {
    const today = new Date().toISOString().slice(0, 10);
    return this.entries()
      .filter((e) => e.event === event && e.at.startsWith(today))
      .reduce((sum, e) => sum + BigInt(e.amount_micro ?? "0"), 0n);
  }
}
