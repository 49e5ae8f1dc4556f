/**
 * An envelope: the gateway's 202 answer to an action (POST /api/v1/deposits,
 * /convert, /borrow, /repay, /withdraw, /sell, /exit), its steps the wallet
 * signs in order. Read here from what a person hands the agent (a file, stdin)
 * and refused in plain words when it is not one (an error answer, a receipt,
 * a cut-down copy) or when it has expired; and each step's decoded call said
 * as a person reads it, from the calldata (never the gateway's label).
 */
import { getAddress, maxUint256 } from "viem";
import { TREASURY_ACTIONS, type TreasuryAction } from "@treasury/core/actions";
import type { DecodedCall } from "@treasury/core/actions/signer-rule";
import { EnvelopeError } from "./errors";
import { tokenAmount } from "./format";
import type { StepTx } from "./policy";

export { EnvelopeError, type EnvelopeProblem } from "./errors";

export interface EnvelopeStep {
  tx_id: string;
  seq: number;
  kind: string;
  status?: string;
  unsigned_transaction: StepTx;
  summary: { description: string };
}

export interface Envelope {
  tx_id: string;
  treasury_id?: string;
  action: string;
  amount_usdc: number;
  fee_usdc?: number;
  expires_at?: string;
  steps: EnvelopeStep[];
  [k: string]: unknown;
}

const WHAT = "the gateway's 202 answer to an action (the JSON POST /api/v1/deposits, /convert, /borrow, /repay, /withdraw, /sell or /exit returned)";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** the envelope in `text` (from `source`, named in errors), checked for shape and expiry; anything else is an EnvelopeError saying what it is */
export function readEnvelope(text: string, source: string, now = new Date()): Envelope {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    const start = text.trim().slice(0, 40);
    throw new EnvelopeError("envelope_not_json", `${source} is not JSON${start ? ` (it starts "${start}")` : " (it is empty)"}: relay reads ${WHAT}`);
  }
  const not = (what: string): never => {
    throw new EnvelopeError("not_an_envelope", `${source} is ${what}, not an envelope: nothing to sign. relay reads ${WHAT}`);
  };
  if (!isObject(body)) return not("not a JSON object");
  if (typeof body.error === "string") return not(`the gateway's error answer ${body.error}${typeof body.message === "string" ? ` ("${body.message}")` : ""}`);
  if (body.object === "relay_receipt") return not("a relay receipt (the step was relayed already)");
  if (typeof body.tx_id !== "string" || !/^tx_/.test(body.tx_id)) {
    if (typeof body.status === "string" && typeof body.action === "string")
      return not(`a managed treasury's receipt (${body.action}, status ${body.status}): the service executes it, the wallet signs nothing`);
    return not("JSON without a tx_id");
  }
  if (!TREASURY_ACTIONS.includes(body.action as TreasuryAction))
    return not(`an answer for "${String(body.action)}", which is not one of the gateway's actions (${TREASURY_ACTIONS.join(", ")})`);
  if (!Array.isArray(body.steps) || body.steps.length === 0)
    return not("an envelope without its steps (relay needs the whole answer as the gateway returned it)");
  for (const [i, s] of (body.steps as unknown[]).entries()) {
    const u = isObject(s) ? s.unsigned_transaction : undefined;
    if (
      !isObject(s) ||
      typeof s.tx_id !== "string" ||
      !isObject(u) ||
      typeof u.chain_id !== "number" ||
      typeof u.to !== "string" ||
      typeof u.data !== "string" ||
      typeof u.value !== "string"
    ) {
      return not(`an envelope whose step ${i + 1} is incomplete (tx_id, unsigned_transaction {chain_id, to, data, value})`);
    }
  }
  const envelope = body as unknown as Envelope;
  if (typeof envelope.amount_usdc !== "number") return not("an envelope without amount_usdc");
  if (typeof envelope.expires_at === "string" && Date.parse(envelope.expires_at) <= now.getTime()) {
    throw new EnvelopeError(
      "envelope_expired",
      `envelope ${envelope.tx_id} (${envelope.action}) expired at ${envelope.expires_at}: ask the gateway for the ${envelope.action} again and relay the new answer`,
    );
  }
  return envelope;
}

/** one decoded call as a person reads it, amounts formatted once here; `names` are the policy's names of its allowed targets */
export function describeCall(c: DecodedCall, names: Record<string, string> = {}): string {
  const named = Object.fromEntries(Object.entries(names).map(([a, n]) => [getAddress(a), n]));
  const who = (a: string | undefined) => (a ? (named[getAddress(a)] ?? a) : "?");
  const amount = (units: bigint, token: string, all: string) => (units === maxUint256 ? all : tokenAmount(units, token));
  switch (c.role) {
    case "fee":
      return `pay the ${tokenAmount(c.amount, c.token)} service fee to ${c.counterparty}`;
    case "approve":
      return `allow ${who(c.counterparty)} to take ${amount(c.amount, c.token, "any amount")}`;
    case "supply":
      return `supply ${tokenAmount(c.amount, c.token)} to ${who(c.to)}`;
    case "borrow":
      return `borrow ${tokenAmount(c.amount, c.token)} from ${who(c.to)} at the variable rate`;
    case "repay":
      return `repay ${amount(c.amount, c.token, "all")} of the USDC debt${c.functionName === "repayWithATokens" ? " with the supplied USDC" : ""} (${who(c.to)})`;
    case "withdraw":
      return `withdraw ${amount(c.amount, c.token, `all of the ${tokenAmount(0n, c.token).split(" ")[1]}`)} from ${who(c.to)} to the wallet`;
    case "swap": {
      const minOut = (c.args[0] as { amountOutMinimum: bigint }).amountOutMinimum;
      return `swap ${tokenAmount(c.amount, c.token)} for at least ${tokenAmount(minOut, c.counterparty!)} (${who(c.to)})`;
    }
  }
}
