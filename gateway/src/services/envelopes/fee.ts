/**
 * The fee of an envelope, exactly as it was planned and signed: its amount, rate and basis are kept with
 * the envelope (envelopes/lifecycle.ts `create`), so the action is recorded with that fee, never today's tier.
 */
import { declarationOf } from "@treasury/core/actions";
import { feeFor, type Fee } from "@treasury/core/domain/fees";
import type { EnvelopeRecord } from "../../store/envelope-store";

/** the fee of an envelope, exactly as it was planned and signed */
export function envelopeFee(envelope: EnvelopeRecord): Fee {
  if (envelope.feeBps !== null && envelope.feeBasis !== null) return { feeMicro: envelope.feeMicro, feeBps: BigInt(envelope.feeBps), basis: envelope.feeBasis };
  // envelopes from before the fee was kept with them: the amount is theirs, the basis of their action
  const f = feeFor(declarationOf(envelope.action).fee, envelope.amountMicro, 0);
  return { ...f, feeMicro: envelope.feeMicro };
}
