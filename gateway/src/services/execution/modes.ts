/**
 * The table of execution modes: for each execution mode a treasury is
 * registered with, the strategies that may carry out its action, asked in
 * order (the first that applies runs it; the last of a row always applies).
 * A new mode is a module beside the others (strategy.ts says what it
 * implements) and a line here.
 */
import type { ExecutionMode, TreasuryRecord } from "../../store/treasury-store";
import type { ChainPosition } from "../../chain/chain-gateway";
import { computedMode } from "./computed";
import { envelopeMode } from "./envelope";
import { ledgerMode } from "./ledger";
import { safeMode } from "./safe";
import { sandboxForkMode } from "./sandbox-fork";
import type { ExecutionStrategy, ModeDeps } from "./strategy";

export type ModeTable = Record<ExecutionMode, readonly ExecutionStrategy[]>;

export function executionModes(deps: ModeDeps): ModeTable {
  return {
    wallet: [envelopeMode(deps)],
    managed: [ledgerMode(deps), sandboxForkMode(deps), safeMode(deps), computedMode(deps)],
  };
}

/** the strategy that carries out this treasury's action, given its position (null: a ledger) */
export async function modeFor(table: ModeTable, t: TreasuryRecord, chain: ChainPosition | null): Promise<ExecutionStrategy> {
  const row = table[t.executionMode];
  for (const s of row) if (await s.applies(t, chain)) return s;
  return row[row.length - 1]!;
}
