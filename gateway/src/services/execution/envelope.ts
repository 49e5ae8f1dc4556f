/**
 * Execution mode `envelope`: a wallet-mode treasury. The action becomes an
 * unsigned envelope of real Aave V3 calls (envelopes/lifecycle.ts `create`),
 * with the wallet's next nonce as a hint; nothing changes until every step of
 * it is relayed (relay-service.ts). In the sandbox, its main call is then made
 * estimable before its prerequisites are signed (envelopes/sandbox-steps.ts).
 */
import { envelopeView } from "../envelopes/view";
import type { ExecutionStrategy, ModeDeps } from "./strategy";

export const envelopeMode = (deps: ModeDeps): ExecutionStrategy => ({
  mode: "envelope",
  needsNonce: true,
  applies: () => true,
  prepare: async (run) => {
    const nonce = run.nonce ?? { nonce: null, source: "none" };
    return {
      recheck: true,
      commit: async (treasury, plan, now) => {
        const { envelope, steps } = await deps.envelopes.create(treasury, plan, now, nonce);
        return { kind: "envelope_created", result: envelopeView(deps.ctx.links, envelope, steps, plan, nonce.source) };
      },
      after: async (outcome) => {
        if (run.chain && (await deps.backing.sandboxed(run.before))) await deps.sandboxSteps.prepare(run.before, String(outcome.result.tx_id));
      },
    };
  },
});
