/**
 * docs/ARCHITECTURE.md's recipe, "How to add an x402 scheme", held: a scheme from one folder
 * (test/helpers/trivial-scheme/) and a line in the registry the gateway takes, nothing else, is offered in every
 * 402, pays a priced route over HTTP (its payer's treasury, credential, settlement header and signed receipt
 * made by the gate), is charged once, names its payer for the rate limit, and is refused in the gate's shapes.
 */
import { randomBytes } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromHeaderJson, toHeaderJson } from "../../gateway/src/x402/payment-match";
import { PAYMENT_SCHEMES } from "../../gateway/src/x402/schemes";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ticketMessage, ticketScheme, TICKET_SCHEME } from "../helpers/trivial-scheme/scheme";
import { rateIdentity, settledPaymentCount } from "../helpers/x402-stack";

const PAY_TO = "0x00000000000000000000000000000000000a11ce";
const AUDIT = "/api/v1/audit";
const PRICE = "1300";

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway(
    { X402_PAY_TO: PAY_TO, X402_FACILITATOR: "local", X402_FACILITATOR_URL: "http://127.0.0.1:9" },
    { schemes: [...PAYMENT_SCHEMES, ticketScheme] },
  );
});
afterAll(async () => gateway?.close());

const payer = privateKeyToAccount(generatePrivateKey());

/** a ticket for the audit's price (or another amount), signed by `by` */
async function ticket(opts: { amount?: string; by?: typeof payer; id?: string } = {}) {
  const t = { id: opts.id ?? randomBytes(8).toString("hex"), amount: opts.amount ?? PRICE, payTo: PAY_TO };
  const signature = await (opts.by ?? payer).signMessage({ message: ticketMessage(t) });
  const accepted = { scheme: TICKET_SCHEME, network: "eip155:84532", amount: t.amount, asset: "", payTo: PAY_TO, maxTimeoutSeconds: 120, extra: {} };
  return { id: t.id, headers: { "payment-signature": toHeaderJson({ x402Version: 2, accepted, payload: { ...t, signature } }) } };
}

describe("a scheme is a folder and a line", () => {
  it("every 402 offers it beside the registry's own schemes", async () => {
    const r = await call(gateway.url, "GET", AUDIT);
    expect(r.status).toBe(402);
    const accepts = (fromHeaderJson(r.headers.get("payment-required")) as { accepts: { scheme: string; amount: string }[] }).accepts;
    expect(accepts.map((a) => [a.scheme, a.amount])).toEqual([
      ["exact", PRICE],
      [TICKET_SCHEME, PRICE],
    ]);
  });

  it("the price list and the discovery list name it on every priced route", async () => {
    const prices = await call(gateway.url, "GET", "/x402/prices.json");
    const audit = (prices.body.prices as { path: string; schemes: string[] }[]).find((p) => p.path === AUDIT);
    expect(audit?.schemes).toEqual(["exact", TICKET_SCHEME]);
    expect((prices.body.prices as { schemes: string[] }[]).every((p) => p.schemes.includes(TICKET_SCHEME))).toBe(true);
    const listed = await call(gateway.url, "GET", "/x402/discovery/resources");
    expect(listed.status).toBe(200);
    expect((listed.body.items as { accepts: { scheme: string }[] }[]).every((i) => i.accepts.some((a) => a.scheme === TICKET_SCHEME))).toBe(true);
  });

  it("pays a priced route over HTTP: served on the payer's treasury, settled once, with its settlement header and receipt", async () => {
    const t = await ticket();
    const r = await call(gateway.url, "GET", AUDIT, { headers: t.headers });
    expect([r.status, r.body.data]).toEqual([200, []]);
    expect(r.headers.get("x-treasury-id")).toMatch(/^trs_/);
    const settlement = fromHeaderJson(r.headers.get("payment-response")) as Record<string, unknown>;
    expect([settlement.success, settlement.transaction, settlement.payer]).toEqual([true, `ticket:${t.id}`, payer.address]);
    // the receipt the gate signs for every paid answer names this scheme and the ticket as its commitment
    const receipt = (settlement.extensions as Record<string, { info: { receipt: { payload: string } } }>)["offer-receipt"]?.info.receipt;
    expect(receipt).toBeDefined();
    expect(await settledPaymentCount(gateway, payer.address)).toBe(1);

    // the same ticket again is spent: refused in the gate's shape, nothing charged
    const again = await call(gateway.url, "GET", AUDIT, { headers: t.headers });
    expect([again.status, again.body.error, again.body.payer]).toEqual([402, "payment_already_used", payer.address]);
    expect(await settledPaymentCount(gateway, payer.address)).toBe(1);
  });

  it("names a paid-before payer for the rate limit while its ticket is unspent, nobody once it is", async () => {
    const fresh = await ticket();
    expect(await rateIdentity(gateway, "GET", AUDIT, fresh.headers)).toBe(payer.address.toLowerCase());
    const stranger = await ticket({ by: privateKeyToAccount(generatePrivateKey()) });
    expect(await rateIdentity(gateway, "GET", AUDIT, stranger.headers)).toBeNull();
    expect((await call(gateway.url, "GET", AUDIT, { headers: fresh.headers })).status).toBe(200);
    expect(await rateIdentity(gateway, "GET", AUDIT, fresh.headers)).toBeNull();
  });

  it("is refused by its own match and decoding, as a 402 the gate writes", async () => {
    const dear = await call(gateway.url, "GET", AUDIT, { headers: (await ticket({ amount: "1299" })).headers });
    expect([dear.status, dear.body.error, dear.body.expected_amount, dear.body.received_amount]).toEqual([402, "payment_does_not_match_route", PRICE, "1299"]);
    expect(dear.body.request_id).toBe(dear.headers.get("x-request-id"));
    const malformed = await call(gateway.url, "GET", AUDIT, { headers: (await ticket({ id: "NOT A TICKET" })).headers });
    expect([malformed.status, malformed.body.error]).toEqual([402, "invalid_payment_header"]);
  });
});
