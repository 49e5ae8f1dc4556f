/**
 * The migrations each dialect runs: the one history (store/schema/history.ts) rendered for SQLite (versions
 * 1 on) and for PostgreSQL (version 5 on, PostgreSQL's first), with the same version numbers and names.
 * What differs between the two is stated in store/schema/dialect.ts.
 */
import type { Dialect } from "./db";
import type { Migration } from "./migration";
import { DIALECTS } from "./schema/dialect";
import { HISTORY } from "./schema/history";
import { render } from "./schema/render";

export const MIGRATIONS: Migration[] = render(HISTORY, DIALECTS.sqlite).migrations;
export const POSTGRES_MIGRATIONS: Migration[] = render(HISTORY, DIALECTS.postgres).migrations;

export const migrationsFor = (dialect: Dialect): Migration[] => (dialect === "postgres" ? POSTGRES_MIGRATIONS : MIGRATIONS);
