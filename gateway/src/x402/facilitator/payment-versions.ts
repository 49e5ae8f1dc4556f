/** The x402 versions the local facilitator takes: a version 2 payment is settled as the version 1 payment it is. */
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import type { RequirementsV2 } from "../payment-match";

export const NETWORK = "base-sepolia";
export const NETWORK_V2 = "eip155:84532";

/** a version 2 payment (its requirements are payment-match's RequirementsV2) */
interface PaymentV2 {
  x402Version: 2;
  accepted: RequirementsV2;
  payload: Record<string, unknown>;
  resource?: { url?: string };
}
export type AnyPayment = PaymentPayload | PaymentV2;
export type AnyRequirements = PaymentRequirements | RequirementsV2;

/**
 * A version 2 payment as the version 1 payment it is (same authorization and
 * signature), or why it cannot be: its `accepted` must be the requirements.
 */
export function asVersion1(
  payment: AnyPayment,
  requirements: AnyRequirements,
): { payment: PaymentPayload; requirements: PaymentRequirements; version: 1 | 2 } | { invalid: string } {
  if (payment.x402Version !== 2) {
    if (payment.x402Version !== 1) return { invalid: "invalid_x402_version" };
    return { payment: payment as PaymentPayload, requirements: requirements as PaymentRequirements, version: 1 };
  }
  const p = payment as PaymentV2;
  const r = requirements as RequirementsV2;
  if (!p.accepted || typeof r.amount !== "string") return { invalid: "invalid_payload" };
  if (p.accepted.network !== NETWORK_V2 || r.network !== NETWORK_V2) return { invalid: "invalid_network" };
  const same = (a: unknown, b: unknown) => String(a).toLowerCase() === String(b).toLowerCase();
  if (p.accepted.scheme !== r.scheme || p.accepted.amount !== r.amount || !same(p.accepted.payTo, r.payTo) || !same(p.accepted.asset, r.asset))
    return { invalid: "invalid_payment_requirements" };
  return {
    version: 2,
    payment: { x402Version: 1, scheme: p.accepted.scheme as "exact", network: NETWORK, payload: p.payload as never },
    requirements: {
      scheme: r.scheme as "exact",
      network: NETWORK,
      maxAmountRequired: r.amount,
      resource: (p.resource?.url ?? "https://x402.invalid/") as `${string}://${string}`,
      description: "",
      mimeType: "application/json",
      payTo: r.payTo as `0x${string}`,
      maxTimeoutSeconds: r.maxTimeoutSeconds,
      asset: r.asset as `0x${string}`,
      extra: r.extra,
    },
  };
}
