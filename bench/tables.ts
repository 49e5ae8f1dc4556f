/**
 * Cost as the work grows: the same routes on an empty store and on one holding
 * 100,000 treasuries, 1,000,000 fee-audit rows (10,000 of them the measured
 * treasury's own trail) and 100,000 idempotency records,
 * on SQLite and on PostgreSQL (an embedded one in its own process). The rows
 * are copies of real ones (made through the API, then replicated in SQL with
 * their keys varied), the gateway runs in its own process, and each route's
 * p50 on the full store is compared with its p50 on the empty one.
 */
import fs from "node:fs";
import path from "node:path";
import { freePort } from "../fixtures/anvil";
import type { DatabaseLocation, Db } from "../gateway/src/store/db";
import { openDatabase } from "../gateway/src/store/open-database";
import { load, type LoadFigures, type Target } from "./http-load";
import { startGatewayProcess, startProcess, urlOf, type ServerProcess } from "./processes";

export const TABLE_ROWS = { treasuries: 100_000, fee_audit: 1_000_000, idempotency_keys: 100_000 };

async function columns(db: Db, table: string): Promise<string[]> {
  if (db.dialect === "sqlite") return (await db.all<{ name: string }>(`PRAGMA table_info(${table})`)).map((c) => c.name);
  return (
    await db.all<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND is_identity = 'NO' AND is_generated = 'NEVER' ORDER BY ordinal_position",
      table,
    )
  ).map((c) => c.column_name);
}

/** insert `n` copies of the row `where` selects, the `vary` columns computed from the copy's number `i` */
async function replicate(db: Db, table: string, where: string, n: number, vary: Record<string, string>): Promise<void> {
  const cols = await columns(db, table);
  const select = cols.map((c) => vary[c] ?? `tpl.${c}`).join(", ");
  const series = db.dialect === "sqlite" ? "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " + n + ") " : "";
  const from = db.dialect === "sqlite" ? "n" : `generate_series(1, ${n}) AS n(i)`;
  await db.exec(`${series}INSERT INTO ${table} (${cols.join(", ")}) SELECT ${select} FROM ${from}, (SELECT * FROM ${table} WHERE ${where} LIMIT 1) tpl`);
}

async function seed(location: DatabaseLocation, template: { treasuryId: string }): Promise<number> {
  const t0 = performance.now();
  const db = await openDatabase(location);
  try {
    const hex40 = db.dialect === "sqlite" ? "'0x' || printf('%040x', 268435456 + i)" : "'0x' || lpad(to_hex(268435456 + i), 40, '0')";
    const txt = (e: string) => (db.dialect === "sqlite" ? `(${e})` : `(${e})::text`);
    await replicate(db, "treasuries", `id = '${template.treasuryId}'`, TABLE_ROWS.treasuries, { id: `'trs_seed_' || ${txt("i")}`, wallet_address: hex40 });
    await replicate(db, "fee_audit", `treasury_id = '${template.treasuryId}'`, TABLE_ROWS.fee_audit, {
      id: `'fee_seed_' || ${txt("i")}`,
      // every hundredth entry is the template treasury's own: its trail is 10,000 entries long (read a page at a time)
      treasury_id: `CASE WHEN i % 100 = 0 THEN '${template.treasuryId}' ELSE 'trs_seed_' || ${txt(`1 + i % ${TABLE_ROWS.treasuries}`)} END`,
    });
    await replicate(db, "idempotency_keys", "state = 'completed'", TABLE_ROWS.idempotency_keys, {
      scope: "'seed'",
      key: `'seed-key-' || ${txt("i")}`,
      expires_at: "'2099-01-01T00:00:00.000Z'",
    });
    // settled as after any bulk load, before the full store is measured: analyzed, and the load's pages written
    // out (PostgreSQL: vacuumed too, and a checkpoint; SQLite: its WAL checkpointed). Otherwise autovacuum and the
    // checkpoint of a million new rows run during the measurement: gateway-status, which reads no seeded table,
    // measured 1.57x and 1.77x slower on the full PostgreSQL store in two runs.
    if (db.dialect === "postgres") {
      await db.exec("VACUUM ANALYZE");
      await db.exec("CHECKPOINT");
    } else {
      await db.exec("ANALYZE");
      await db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
  } finally {
    await db.close();
  }
  return (performance.now() - t0) / 1000;
}

export interface TableFigures {
  store: "sqlite" | "postgres";
  seed_seconds: number;
  rows: typeof TABLE_ROWS;
  routes: { name: string; empty: LoadFigures; full: LoadFigures; p50_growth: number }[];
}

/** the routes of this comparison, given the gateway and a bearer key of a treasury with history */
function targets(url: string, key: string, writer: string, run: string): { name: string; target: Target }[] {
  let n = 0;
  return [
    { name: "GET /api/v1/public/gateway-status", target: { url: `${url}/api/v1/public/gateway-status` } },
    {
      name: "POST /api/v1/public/preview",
      target: { url: `${url}/api/v1/public/preview`, body: () => JSON.stringify({ action: "borrow", amount: 1000, current_ltv: 40 }) },
    },
    { name: "GET /api/v1/treasury (bearer)", target: { url: `${url}/api/v1/treasury`, headers: { authorization: `Bearer ${key}` } } },
    // one entry per page: the same answer size on both stores, so only the scan's cost can grow
    { name: "GET /api/v1/audit?limit=1 (bearer)", target: { url: `${url}/api/v1/audit?limit=1`, headers: { authorization: `Bearer ${key}` } } },
    {
      name: "POST /api/v1/treasuries",
      target: { url: `${url}/api/v1/treasuries`, body: () => JSON.stringify({ wallet_address: `0x${(0xa0000000 + n++).toString(16).padStart(40, "0")}` }) },
    },
    {
      name: "POST /api/v1/deposits (bearer)",
      // another treasury's: the measured reads do not see the bench's own writes
      target: {
        url: `${url}/api/v1/deposits`,
        body: () => JSON.stringify({ amount_usdc: 100 }),
        headersOf: () => ({ authorization: `Bearer ${writer}`, "idempotency-key": `tables-${run}-${n++}` }),
      },
    },
  ];
}

async function measure(
  dir: string,
  env: Record<string, string>,
  key: string,
  writer: string,
  run: string,
  opts: { connections: number; seconds: number; warmupSeconds: number },
): Promise<LoadFigures[]> {
  const gw = await startGatewayProcess(dir, env);
  try {
    const out: LoadFigures[] = [];
    // one connection for the deposits: one treasury's actions are serialized by its conflict slot
    for (const t of targets(gw.url, key, writer, run))
      out.push(await load(t.name, t.target, t.name.startsWith("POST /api/v1/deposits") ? { ...opts, connections: 1 } : opts));
    return out;
  } finally {
    await gw.stop();
  }
}

export async function benchTables(dir: string, opts: { connections: number; seconds: number; warmupSeconds: number }): Promise<TableFigures[]> {
  const results: TableFigures[] = [];
  let pgProcess: ServerProcess | undefined;
  try {
    for (const store of ["sqlite", "postgres"] as const) {
      let env: Record<string, string>;
      let location: DatabaseLocation;
      const dataDir = fs.mkdtempSync(path.join(dir, `tables-${store}-`));
      if (store === "sqlite") {
        env = { DATA_DIR: dataDir };
        location = { file: path.join(dataDir, "gateway.sqlite") };
      } else {
        pgProcess = await startProcess(
          ["--import", "tsx", "scripts/embedded-postgres-process.ts", path.join(dataDir, "pg"), String(await freePort())],
          {},
          /"url"/,
          path.join(dir, "tables-pg.log"),
          [],
          { stdin: "pipe" },
        );
        const url = urlOf(pgProcess.line);
        env = { DATABASE_URL: url };
        location = { url };
      }
      // the template: a managed sandbox treasury with a deposit (fee audit, execution, idempotency record)
      const gw = await startGatewayProcess(dir, env);
      const me = (await (await fetch(`${gw.url}/api/v1/sandbox/keys`, { method: "POST" })).json()) as { key: string; treasury_id: string };
      const key = me.key;
      const writer = ((await (await fetch(`${gw.url}/api/v1/sandbox/keys`, { method: "POST" })).json()) as { key: string }).key;
      await fetch(`${gw.url}/api/v1/deposits`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "idempotency-key": "tables-template-0001" },
        body: JSON.stringify({ amount_usdc: 100 }),
      });
      await gw.stop();
      const empty = await measure(dir, env, key, writer, `${store}-empty`, opts);
      const seedSeconds = await seed(location, { treasuryId: me.treasury_id });
      const full = await measure(dir, env, key, writer, `${store}-full`, opts);
      results.push({
        store,
        seed_seconds: Number(seedSeconds.toFixed(1)),
        rows: TABLE_ROWS,
        routes: empty.map((e, i) => ({ name: e.name, empty: e, full: full[i]!, p50_growth: Number((full[i]!.p50_us / e.p50_us).toFixed(2)) })),
      });
      await pgProcess?.stop();
      pgProcess = undefined;
    }
    return results;
  } finally {
    await pgProcess?.stop();
  }
}
