/**
 * Execution mode `computed`: a managed treasury the service cannot act for on
 * a chain. An operator's wallet that is not a contract: the action is computed
 * on the wallet's Aave position, nothing is sent (the service holds no key of
 * it) and it never counts as settled volume. An unproven registration: applied
 * to its own sandbox ledger, the wallet's chain state neither read nor changed.
 * A treasury without a chain: applied to its sandbox ledger.
 */
import { ownLedger } from "./backing";
import { LEDGER_EXECUTION } from "./ledger";
import { managedOrigin, type ExecutionStrategy, type ModeDeps } from "./strategy";

/** what a managed action of an unproven registration says it did */
const OWN_LEDGER_EXECUTION = {
  simulated: true,
  ledger: "own_sandbox_ledger",
  reason: "ownership_unproven",
  how: "applied to this registration's own sandbox ledger; nothing was sent and the wallet's chain state was neither read nor changed: the registration did not prove its wallet (ownership unproven), and the service acts on a wallet's chain position only for a registration that proved it (ownership_proof at registration, or the wallet's own x402 payment)",
} as const;

export const computedMode = (deps: ModeDeps): ExecutionStrategy => ({
  mode: "computed",
  applies: () => true,
  prepare: async (run) => ({
    recheck: true,
    commit: async (treasury, plan, now) => {
      const receipt = await deps.recorder.recordAction(treasury, plan, managedOrigin(run.trigger), now);
      const how = ownLedger(treasury)
        ? OWN_LEDGER_EXECUTION
        : run.chain
          ? { simulated: true, how: `computed on the wallet's Aave position on ${treasury.chain}; nothing was sent (the service holds no key of this wallet)` }
          : LEDGER_EXECUTION;
      return { kind: "executed", result: { ...receipt, chain_execution: how } };
    },
  }),
});
