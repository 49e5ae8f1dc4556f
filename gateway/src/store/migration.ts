/** One versioned schema migration, as one dialect runs it (rendered from the one history: store/migrations.ts, store/schema/). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
