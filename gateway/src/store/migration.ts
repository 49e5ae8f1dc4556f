/** One versioned schema migration (SQLite's history: store/migrations.ts; PostgreSQL's: store/postgres-migrations.ts). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
