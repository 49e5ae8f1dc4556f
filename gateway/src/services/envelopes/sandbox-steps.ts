/**
 * The sandbox's part in an envelope's life, on a local test chain only
 * (chain/sandbox-chain.ts; the treasury `sandboxed`, execution/backing.ts):
 *
 *   prepare       at creation, the main call made estimable before its prerequisites are signed
 *                 (approvals set, a swap's output delivered ahead), so a client that fills gas with
 *                 eth_estimateGas can sign the one unsigned_transaction; what was done is kept in the
 *                 envelope's params (`sandbox_prepared`)
 *   provideBefore the one-signature relay: the steps before the main call, each claimed on its row
 *                 before its storage write, provided without a signature (all released if one fails)
 *   provideTrailing  once the main call is mined: the steps after it (the borrow's fee transfer, paid
 *                 from what was borrowed), claimed then provided
 *   takeBack      the wallet swapped for real: the output delivered ahead goes back to the pool
 */
import { TreasuryError } from "@treasury/core/lib/errors";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { SandboxChain } from "../../chain/sandbox-chain";
import type { EnvelopeRecord, StepRecord } from "../../store/envelope-store";
import type { TreasuryRecord } from "../../store/treasury-store";
import type { ServiceContext } from "../context";
import { mainStep } from "./view";

/** a provided step's receipt while its storage write runs */
const BEING_PROVIDED = { object: "provided_step", provided_by: "sandbox", method: "anvil_setStorageAt", effect: "claimed; being provided" };

/** what the sandbox prepared for a step when the envelope was created (SandboxSteps.prepare): `output_delivered`, say */
export function preparedFor(envelope: EnvelopeRecord, step: StepRecord): string | null {
  const list = Array.isArray(envelope.params.sandbox_prepared) ? (envelope.params.sandbox_prepared as string[]) : [];
  const hit = list.find((p) => p.startsWith(`${step.seq}:`));
  return hit ? hit.slice(hit.indexOf(":") + 1) : null;
}

export class SandboxSteps {
  constructor(
    private readonly ctx: ServiceContext<"envelopes">,
    private readonly sandbox: SandboxChain,
  ) {}

  /** at creation: the prerequisites of the main call made ahead where the sandbox can (SandboxChain.prepare) */
  async prepare(t: TreasuryRecord, envelopeTxId: string): Promise<void> {
    const steps = await this.ctx.stores.envelopes.steps(envelopeTxId);
    const main = mainStep(steps);
    const prepared: string[] = [];
    for (const s of steps) {
      if (s.seq >= main.seq) continue;
      const done = await this.sandbox.prepare(t.chain, t.walletAddress, s).catch(() => null);
      if (done) prepared.push(`${s.seq}:${done}`);
    }
    if (prepared.length === 0) return;
    const envelope = (await this.ctx.stores.envelopes.get(envelopeTxId))!;
    await this.ctx.stores.envelopes.setParams(envelopeTxId, { ...envelope.params, sandbox_prepared: prepared });
  }

  /** the one-signature relay: `before` (the steps ahead of the main call) claimed and the envelope flagged in one transaction, then provided */
  async provideBefore(t: TreasuryRecord, envelope: EnvelopeRecord, before: StepRecord[]): Promise<void> {
    const at = this.ctx.clock.now().toISOString();
    await this.ctx.tx.transaction(async () => {
      for (const s of before) {
        if (!(await this.ctx.stores.envelopes.provideStep(s.txId, { ...BEING_PROVIDED }, at)))
          throw new TreasuryError("step_in_flight", `step ${s.seq} (${s.kind}) of ${envelope.txId} is being relayed by another request; retry`);
      }
      const fresh = (await this.ctx.stores.envelopes.get(envelope.txId))!;
      await this.ctx.stores.envelopes.setParams(envelope.txId, { ...fresh.params, one_signature: true });
    });
    for (const s of before) {
      try {
        const provided = await this.sandbox.provide(t.chain, t.walletAddress, s, { outputDelivered: preparedFor(envelope, s) === "output_delivered" });
        await this.ctx.stores.envelopes.provideReceipt(s.txId, { ...provided, tx_id: s.txId, seq: s.seq, kind: s.kind });
      } catch (err) {
        for (const u of before) await this.ctx.stores.envelopes.unprovideStep(u.txId);
        throw new TreasuryError("chain_unavailable", `the sandbox could not provide step ${s.seq} (${s.kind}): ${(err as Error).message}`);
      }
    }
  }

  /** once a one-signature envelope's main call is mined: the steps after it, claimed then provided */
  async provideTrailing(envelope: EnvelopeRecord, main: StepRecord, t: TreasuryRecord): Promise<void> {
    const at = this.ctx.clock.now().toISOString();
    for (const s of await this.ctx.stores.envelopes.steps(envelope.txId)) {
      if (s.seq <= main.seq || s.status !== "awaiting_signature") continue;
      if (!(await this.ctx.stores.envelopes.provideStep(s.txId, { ...BEING_PROVIDED }, at))) continue;
      try {
        const provided = await this.sandbox.provide(t.chain, t.walletAddress, s);
        await this.ctx.stores.envelopes.provideReceipt(s.txId, { ...provided, tx_id: s.txId, seq: s.seq, kind: s.kind });
      } catch (err) {
        await this.ctx.stores.envelopes.unprovideStep(s.txId);
        throw err;
      }
    }
  }

  /** a swap the wallet made for real whose output the sandbox had delivered ahead: that output goes back (best effort) */
  async takeBack(chain: TreasuryChain, envelope: EnvelopeRecord, swap: StepRecord): Promise<void> {
    if (preparedFor(envelope, swap) === "output_delivered") await this.sandbox.takeBack(chain, swap).catch(() => undefined);
  }
}
