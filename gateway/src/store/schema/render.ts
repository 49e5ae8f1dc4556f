/**
 * The history (schema/history.ts) rendered for one dialect: each step applied to a model of the tables as
 * they stand on that dialect, and written as that dialect's SQL (schema/ddl.ts for what both write alike,
 * schema/dialect.ts for the rest). Versions before the dialect's first are folded into it. The model the
 * history ends with must be the declared tables (`differences`): what the stores read is what was migrated.
 */
import type { Migration } from "../migration";
import { specKey } from "./column";
import { columnSql, createTableSql, indexSql, type DialectRules, type TableState } from "./ddl";
import type { Step, Version } from "./steps";
import type { Table } from "./table";

export interface Rendered {
  readonly migrations: Migration[];
  /** the tables as the last version leaves them on this dialect */
  readonly tables: ReadonlyMap<string, TableState>;
}

export function render(history: readonly Version[], rules: DialectRules): Rendered {
  const tables = new Map<string, TableState>();
  const migrations: Migration[] = [];
  let statements: string[] = [];
  for (const v of history) {
    for (const step of v.steps) statements.push(...apply(step, tables, rules));
    if (v.version < rules.firstVersion) continue;
    // a version with nothing to do on this dialect is still recorded as applied
    migrations.push({ version: v.version, name: v.name, sql: statements.length > 0 ? statements.map((s) => `${s};\n`).join("") : "SELECT 1;" });
    statements = [];
  }
  return { migrations, tables };
}

function tableOf(tables: Map<string, TableState>, name: string): TableState {
  const t = tables.get(name);
  if (!t) throw new Error(`no table ${name} at this point of the history`);
  return t;
}

function apply(step: Step, tables: Map<string, TableState>, rules: DialectRules): string[] {
  switch (step.op) {
    case "create_table": {
      const { name, columns, options } = step.table;
      const names = Object.keys(columns);
      const end = step.through === undefined ? names.length : names.indexOf(step.through) + 1;
      if (end === 0 || tables.has(name)) throw new Error(`cannot create ${name} through ${step.through}`);
      const created = names.slice(0, end);
      for (const n of Object.keys(step.was)) if (!created.includes(n)) throw new Error(`${name}.${n} is not created here`);
      const state: TableState = {
        name,
        columns: created.map((n) => [n, (step.was[n] ?? columns[n]!).spec]),
        primaryKey: options.primaryKey,
        unique: options.unique,
        insertionOrder: false,
        indexes: [],
        triggers: [],
      };
      tables.set(name, state);
      return [createTableSql(name, state, rules)];
    }
    case "add_column": {
      const t = tableOf(tables, step.table.name);
      if (t.columns.some(([n]) => n === step.column)) throw new Error(`${t.name}.${step.column} exists`);
      const spec = step.table.columns[step.column]!.spec;
      t.columns.push([step.column, spec]);
      return [`ALTER TABLE ${t.name} ADD COLUMN ${columnSql(step.column, spec, rules)}`];
    }
    case "change_column": {
      const t = tableOf(tables, step.table.name);
      const i = t.columns.findIndex(([n]) => n === step.column);
      if (i < 0) throw new Error(`no column ${t.name}.${step.column}`);
      const before: TableState = { ...t, columns: [...t.columns] };
      t.columns[i] = [step.column, step.table.columns[step.column]!.spec];
      return rules.changeColumn(before, t, step.column);
    }
    case "create_index":
      tableOf(tables, step.index.table).indexes.push(step.index);
      return [indexSql(step.index)];
    case "one_way":
      tableOf(tables, step.trigger.table).triggers.push(step.trigger.name);
      return rules.oneWay(step.trigger);
    case "drop_one_way": {
      const t = tableOf(tables, step.trigger.table);
      t.triggers = t.triggers.filter((n) => n !== step.trigger.name);
      return rules.dropOneWay(step.trigger);
    }
    case "insertion_order":
      tableOf(tables, step.table.name).insertionOrder = true;
      return rules.insertionOrder(step.table.name);
    case "data":
      return [step.sql];
    case "only":
      return step.dialect === rules.dialect ? step.steps.flatMap((s) => apply(s, tables, rules)) : [];
  }
}

/** where the migrated tables and the declared ones differ (none, or the history and the declarations disagree) */
export function differences(declared: readonly Table[], migrated: ReadonlyMap<string, TableState>): string[] {
  const out: string[] = [];
  for (const name of migrated.keys()) if (!declared.some((t) => t.name === name)) out.push(`${name}: migrated, not declared`);
  for (const table of declared) {
    const t = migrated.get(table.name);
    if (!t) {
      out.push(`${table.name}: declared, never created`);
      continue;
    }
    const want = Object.entries(table.columns).map(([n, c]) => `${n} ${specKey(c.spec)}`);
    const got = t.columns.map(([n, spec]) => `${n} ${specKey(spec)}`);
    if (JSON.stringify(want) !== JSON.stringify(got)) out.push(`${table.name}: columns ${JSON.stringify(got)}, declared ${JSON.stringify(want)}`);
    if (t.insertionOrder !== (table.options.insertionOrder ?? false)) out.push(`${table.name}: insertion order ${t.insertionOrder}`);
  }
  return out;
}
