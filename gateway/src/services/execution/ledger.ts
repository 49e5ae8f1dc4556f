/**
 * Execution mode `ledger`: a sandbox key's managed treasury (a demo), whose
 * actions change nothing but its ledger in the store. ActionService runs the
 * whole request in one database transaction (the treasury's slot must be
 * free, then the checks, the ledger, the receipt and its fee audit): the
 * transaction itself excludes a concurrent action of the treasury, so no slot
 * is claimed around it. Such a treasury is never a payer's (x402 payments
 * resolve to proven or paid treasuries), so no settled payment meets a refusal.
 */
import { onLedgerOnly } from "./backing";
import { managedOrigin, type ExecutionStrategy, type ModeDeps } from "./strategy";

/** what a ledger's receipt says of how it ran */
export const LEDGER_EXECUTION = { simulated: true, how: "applied to the sandbox ledger; nothing was sent" } as const;

export const ledgerMode = (deps: ModeDeps): ExecutionStrategy => ({
  mode: "ledger",
  applies: (t) => onLedgerOnly(t),
  prepare: async (run) => ({
    recheck: true,
    commit: async (treasury, plan, now) => {
      const receipt = await deps.recorder.recordAction(treasury, plan, managedOrigin(run.trigger), now);
      return { kind: "executed", result: { ...receipt, chain_execution: LEDGER_EXECUTION } };
    },
  }),
});
