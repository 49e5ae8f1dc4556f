/**
 * A database kept at an older version, with rows in it, migrated to the last: what the history's data steps
 * do to the rows (SQLite from version 4, PostgreSQL from its first, 5). The schema each version leaves is held
 * by schema-snapshot.test.ts; this holds the rows: the steps that fill a new column, reset the fee ratchet
 * under its one-way trigger, and rebuild a table to change a CHECK keep or transform every row as they did.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Db } from "../../gateway/src/store/db";
import { migrate, migrationsFor } from "../../gateway/src/store/open-database";
import { openPostgres } from "../../gateway/src/store/postgres-db";
import { openSqlite } from "../../gateway/src/store/sqlite-db";
import { emptyDatabase, TEST_STORE } from "../helpers/store";

const upTo = (db: Db, version: number) =>
  migrate(
    db,
    migrationsFor(db.dialect).filter((m) => m.version <= version),
  );
const T = "2024-01-01T00:00:00.000Z";
const SAFE = "0x5AfE000000000000000000000000000000000001";

async function seedTreasury(db: Db, id: string, origin: string): Promise<void> {
  await db.run(
    "INSERT INTO treasuries (id, wallet_address, chain, preset, execution_mode, status, origin, created_at, updated_at) VALUES (?, '0xabc', 'base', 'balanced', 'managed', 'active', ?, ?, ?)",
    id,
    origin,
    T,
    T,
  );
}

describe("a kept database migrated to the last version", () => {
  it("SQLite from version 4: rows kept, new columns filled, the ratchet reset under its trigger, rebuilt tables whole", async () => {
    const db = openSqlite(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "upgrade-")), "db.sqlite"));
    try {
      await upTo(db, 4);
      await seedTreasury(db, "trs_paid", "x402_payer");
      await seedTreasury(db, "trs_reg", "registration");
      await db.run("INSERT INTO api_keys (id, key_hash, kind, last4, treasury_id, created_at) VALUES ('key_1', 'h1', 'live', '1234', 'trs_reg', ?)", T);
      await db.run(
        "INSERT INTO envelopes (tx_id, treasury_id, action, amount_micro, fee_micro, params, chain, chain_id, status, created_at, expires_at) VALUES ('env_1', 'trs_reg', 'deposit', '100', '1', '{}', 'base', 8453, 'relayed', ?, ?)",
        T,
        T,
      );
      await db.run(
        "INSERT INTO envelope_steps (tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status, tx_hash, signed_transaction, receipt, relayed_at) VALUES ('stp_1', 'env_1', 0, 'approve', '0xto', '0x', '0', '{}', 'relayed', '0xhash', '0xsigned', '{\"ok\":true}', ?)",
        T,
      );
      await db.run(
        "INSERT INTO fee_audit (id, treasury_id, action, amount_micro, fee_micro, fee_bps, fee_basis, fee_tier, trigger, execution_ref, created_at) VALUES ('fee_1', 'trs_reg', 'deposit', '100', '1', 100, 'amount', 'launch', 'test', 'dep_1', ?)",
        T,
      );
      await db.run("UPDATE fee_ratchet SET tier_index = 2, platform_volume_micro = '5000' WHERE id = 1");
      await db.run(
        "INSERT INTO delegations (treasury_id, safe, module, automation, registered_at, protect_below_health) VALUES ('trs_reg', ?, '0xmod', '0xauto', ?, 1.5)",
        SAFE,
        T,
      );
      await db.run("INSERT INTO protection_actions (id, treasury_id, status, health_before, created_at) VALUES ('pa_1', 'trs_reg', 'executed', 1.2, ?)", T);

      expect(await migrate(db, migrationsFor("sqlite"))).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);

      expect(await db.all("SELECT id, ownership, ownership_proof, usdc_supplied_micro FROM treasuries ORDER BY id")).toEqual([
        { id: "trs_paid", ownership: "paid", ownership_proof: null, usdc_supplied_micro: "0" },
        { id: "trs_reg", ownership: "unproven", ownership_proof: null, usdc_supplied_micro: "0" },
      ]);
      expect(await db.all("SELECT * FROM api_keys")).toEqual([
        {
          id: "key_1",
          key_hash: "h1",
          kind: "live",
          last4: "1234",
          treasury_id: "trs_reg",
          access_request_id: null,
          created_at: T,
          expires_at: null,
          revoked_at: null,
          owner_address: null,
          revoked_reason: null,
        },
      ]);
      expect(await db.all("SELECT * FROM envelope_steps")).toEqual([
        {
          tx_id: "stp_1",
          envelope_tx_id: "env_1",
          seq: 0,
          kind: "approve",
          to_address: "0xto",
          data: "0x",
          value: "0",
          summary: "{}",
          status: "relayed",
          tx_hash: "0xhash",
          signed_transaction: "0xsigned",
          receipt: '{"ok":true}',
          relayed_at: T,
          signer: null,
          tx_nonce: null,
          broadcast_at: null,
          failed_attempts: "[]",
        },
      ]);
      expect(await db.get("SELECT fee_bps, fee_basis FROM envelopes")).toEqual({ fee_bps: null, fee_basis: null });
      expect(await db.get("SELECT environment, counts_toward_volume FROM fee_audit")).toEqual({ environment: "sandbox", counts_toward_volume: 0 });
      expect(await db.get("SELECT tier_index, platform_volume_micro FROM fee_ratchet")).toEqual({ tier_index: 0, platform_volume_micro: "0" });
      expect(await db.get("SELECT safe FROM protection_actions")).toEqual({ safe: SAFE });
      expect(await db.get("SELECT chain, proof, proven_at, pending_upgrade, armed FROM delegations")).toEqual({
        chain: null,
        proof: null,
        proven_at: null,
        pending_upgrade: null,
        armed: 1,
      });

      // the ratchet's trigger is back, the rebuilt tables take their new values and keep their constraints
      await db.run("UPDATE fee_ratchet SET tier_index = 1 WHERE id = 1");
      await expect(db.run("UPDATE fee_ratchet SET tier_index = 0 WHERE id = 1")).rejects.toThrow(/one-way/);
      await db.run("INSERT INTO api_keys (id, key_hash, kind, last4, created_at) VALUES ('key_2', 'h2', 'console', '5678', ?)", T);
      await expect(db.run("INSERT INTO api_keys (id, key_hash, kind, last4, created_at) VALUES ('key_3', 'h3', 'other', '5678', ?)", T)).rejects.toThrow(
        /CHECK/,
      );
      await expect(db.run("INSERT INTO api_keys (id, key_hash, kind, last4, created_at) VALUES ('key_4', 'h1', 'live', '5678', ?)", T)).rejects.toThrow(
        /UNIQUE/,
      );
      await db.run("UPDATE envelope_steps SET status = 'broadcasting' WHERE tx_id = 'stp_1'");
      await expect(
        db.run(
          "INSERT INTO envelope_steps (tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status) VALUES ('stp_2', 'env_nope', 1, 'k', '0x', '0x', '0', '{}', 'relayed')",
        ),
      ).rejects.toThrow(/FOREIGN KEY/);
    } finally {
      await db.close();
    }
  });

  it.skipIf(TEST_STORE !== "postgres")("PostgreSQL from version 5: the api_keys kind check widened with its rows kept", async () => {
    const location = await emptyDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "upgrade-")));
    const db = await openPostgres((location as { url: string }).url, { max: 2 });
    try {
      await upTo(db, 5);
      await seedTreasury(db, "trs_reg", "registration");
      await db.run("INSERT INTO api_keys (id, key_hash, kind, last4, treasury_id, created_at) VALUES ('key_1', 'h1', 'live', '1234', 'trs_reg', ?)", T);
      await db.run("UPDATE fee_ratchet SET tier_index = 2 WHERE id = 1");
      expect(await migrate(db, migrationsFor("postgres"))).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
      expect(await db.all("SELECT id, kind, owner_address FROM api_keys")).toEqual([{ id: "key_1", kind: "live", owner_address: null }]);
      expect(await db.get("SELECT rowid FROM treasuries")).toEqual({ rowid: 1 });
      await db.run("INSERT INTO api_keys (id, key_hash, kind, last4, created_at) VALUES ('key_2', 'h2', 'console', '5678', ?)", T);
      await expect(db.run("INSERT INTO api_keys (id, key_hash, kind, last4, created_at) VALUES ('key_3', 'h3', 'other', '5678', ?)", T)).rejects.toThrow(
        /api_keys_kind_check/,
      );
      await expect(db.run("UPDATE fee_ratchet SET tier_index = 1 WHERE id = 1")).rejects.toThrow(/one-way/);
    } finally {
      await db.close();
    }
  });

  it("version 15: the row engines of one key shared before becomes that key's engine row; a gateway's row names no key", async () => {
    const location = await emptyDatabase(fs.mkdtempSync(path.join(os.tmpdir(), "upgrade-")));
    const db = "url" in location ? await openPostgres(location.url, { max: 2 }) : openSqlite(location.file);
    try {
      await upTo(db, 14);
      await db.run("INSERT INTO instances (id, started_at, heartbeat_at) VALUES ('engine:0xabc0000000000000000000000000000000000001', ?, ?)", T, T);
      await db.run("INSERT INTO instances (id, started_at, heartbeat_at) VALUES ('ins0123456789ab', ?, ?)", T, T);
      expect(await migrate(db, migrationsFor(db.dialect))).toEqual([15, 16, 17]);
      expect(await db.all("SELECT id, automation FROM instances ORDER BY id")).toEqual([
        { id: "engine:0xabc0000000000000000000000000000000000001", automation: "0xabc0000000000000000000000000000000000001" },
        { id: "ins0123456789ab", automation: null },
      ]);
    } finally {
      await db.close();
    }
  });
});
