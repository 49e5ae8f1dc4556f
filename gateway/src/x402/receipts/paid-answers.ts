/**
 * Offers and receipts on the wire: what the request stages (http/stages/) and the MCP tools (mcp/) call.
 *
 *   402            `extensions["offer-receipt"]`: one signed offer per entry of the route's v2 `accepts`
 *                  (`exact`, and the session offer when sessions are configured), for the URL the 402 names
 *                  (offer.ts). The challenge of a request without a proof gets them through challenge.ts's
 *                  `extensions` (v1 body and v2 header); a 402 written later in the request (a refused proof,
 *                  a failed settlement, a session's corrective 402) gets them from `offerOnRefusal`, signed
 *                  before the payment stages run because those refusals are written synchronously.
 *   paid HTTP      the settlement header settle() set (PAYMENT-RESPONSE, or X-PAYMENT-RESPONSE for v1) gets
 *                  `extensions["offer-receipt"].info.receipt`, bound to the request as received (method,
 *                  `originalUrl`, the body's bytes: `res.locals.rawBody`, kept by http/content-type.ts) and to
 *                  the answer's bytes as sent. The payment is the header's (its `transaction`: a 0x tx hash is
 *                  `{transaction}`, anything else, an x402 session's `<channelId>:<cumulative>`, is
 *                  `{commitment}`) at the route's own terms for the scheme the proof chose, for the amount the
 *                  settlement states (a metered `upto` call's `amount`, a session's `extra.chargedAmount`), else
 *                  the route's price.
 *   paid MCP call  the REST twin's receipt bound again to the tool's name, the arguments as the client sent
 *                  them and the tool result (receipt.ts `rebindToToolCall`), in `_meta["x402/payment-response"]`.
 *
 * The payment is already settled when a receipt is signed: a receipt that cannot be issued is logged and the
 * paid answer goes out without it, never a charged request without its answer.
 */
import type { SignedReceipt } from "@x402/extensions/offer-receipt";
import type { Clock } from "../../lib/clock";
import { fromHeaderJson, PAYMENT_HEADERS, toHeaderJson } from "../payment-match";
import type { ToolCallFacts } from "./digest";
import { OFFER_EXTENSION_KEY, signOffers, type OfferTerms } from "./offer";
import { issueReceipt, rebindToToolCall, RECEIPT_EXTENSION_KEY, withReceipt, withReceiptHeader, type PaymentFacts } from "./receipt";
import type { ReceiptSigningKey } from "./receipt-key";

/** what a paid answer reads of its request (the HTTP layer's request has these members) */
interface Request {
  readonly method: string;
  readonly path: string;
  readonly originalUrl: string;
  header(name: string): string | undefined;
}

/** what a paid answer reads and writes of its response (the HTTP layer's response has these members) */
interface Response {
  readonly locals: Record<string, unknown>;
  readonly statusCode: number;
  getHeader(name: string): unknown;
  setHeader(name: string, value: number | string | readonly string[]): unknown;
  json(body?: unknown): unknown;
}

/** a priced route, as the price list names it (method, declared path) */
export type PricedRoute = { method: string; path: string };

export interface PaidAnswerDeps {
  key: ReceiptSigningKey;
  clock: Clock;
  links: { url(path: string): string };
  /** the route's x402 v2 requirements, in the order its 402 lists them (the gate's PaymentRequired `accepts`) */
  accepts(route: PricedRoute): readonly (OfferTerms & { amount: string })[];
  log(err: unknown, message: string): void;
}

export interface PaidAnswers {
  readonly key: ReceiptSigningKey;
  /** `{ "offer-receipt": ... }` for a 402 naming `resourceUrl` with these `accepts` */
  offers(resourceUrl: string, accepts: readonly OfferTerms[]): Promise<Record<string, unknown>>;
  /** the offers of a priced route's 402 for this request (its URL is the one the 402 names) */
  offersFor(req: Request, route: PricedRoute): Promise<Record<string, unknown>>;
  /** every 402 this request's payment stages write from now on carries the route's signed offers */
  offerOnRefusal(req: Request, res: Response, route: PricedRoute): Promise<void>;
  /** the receipt of a paid HTTP answer, into the settlement header settle() set; `text`: the answer's bytes as they will be sent */
  signHttpAnswer(req: Request, res: Response, route: PricedRoute, payer: string, text: string): Promise<void>;
  /** the settlement of a paid MCP call with the REST twin's receipt bound to the tool call and its result (without `_meta`) */
  signToolCall(settlement: Record<string, unknown>, call: ToolCallFacts, result: Record<string, unknown>): Promise<Record<string, unknown>>;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** at most this many routes' signed offers are kept (one per priced route and resource URL) */
const OFFERS_KEPT = 1_000;

/** the settlement header on this answer: its name and value (v2's first), or undefined when nothing was settled */
function settlementHeader(res: Response): { name: string; value: string } | undefined {
  for (const version of [2, 1] as const) {
    const name = PAYMENT_HEADERS[version].response;
    const value = res.getHeader(name);
    if (typeof value === "string") return { name, value };
  }
  return undefined;
}

/** the scheme the request's proof chose: a v2 proof's `accepted.scheme`; a v1 proof is `exact` */
function schemeOf(req: Request): string {
  const v2 = req.header(PAYMENT_HEADERS[2].payment);
  const accepted = v2 ? (fromHeaderJson(v2)?.accepted as { scheme?: unknown } | undefined) : undefined;
  return typeof accepted?.scheme === "string" ? accepted.scheme : "exact";
}

/** the request's content bytes as received (http/content-type.ts keeps them); none: the empty body */
export const rawBodyOf = (res: Response): Buffer | string => (Buffer.isBuffer(res.locals.rawBody) ? res.locals.rawBody : "");

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function paidAnswers(deps: PaidAnswerDeps): PaidAnswers {
  const { key, clock, links } = deps;
  // a route's signed offers are signed again when a quarter of their validity is gone, not for every request
  const signed = new Map<string, { until: number; offers: Promise<Awaited<ReturnType<typeof signOffers>>> }>();
  const offers = async (resourceUrl: string, accepts: readonly OfferTerms[]) => {
    const id = `${resourceUrl} ${JSON.stringify(accepts)}`;
    const now = clock.now().getTime();
    let entry = signed.get(id);
    if (!entry || entry.until <= now) {
      const ttl = Math.min(...accepts.map((a) => a.maxTimeoutSeconds)) * 250;
      entry = { until: now + ttl, offers: signOffers(key, resourceUrl, accepts, clock) };
      if (signed.size >= OFFERS_KEPT) signed.delete(signed.keys().next().value!);
      signed.set(id, entry);
    }
    return { [OFFER_EXTENSION_KEY]: await entry.offers };
  };
  const offersFor = (req: Request, route: PricedRoute) => offers(links.url(req.path), deps.accepts(route));

  const paymentOf = (req: Request, route: PricedRoute, payer: string, settlement: Record<string, unknown>): PaymentFacts => {
    const scheme = schemeOf(req);
    const terms = deps.accepts(route).find((a) => a.scheme === scheme);
    if (!terms) throw new Error(`the route ${route.method} ${route.path} offers no ${scheme} payment`);
    const transaction = String(settlement.transaction ?? "");
    // what was charged: a metered (`upto`) settlement's `amount`, a session's `extra.chargedAmount`, else the route's price
    const charged = String(settlement.amount ?? (isObject(settlement.extra) ? settlement.extra.chargedAmount : undefined) ?? terms.amount);
    if (!/^\d+$/.test(charged)) throw new Error(`the settlement states no amount in token units (${charged})`);
    return {
      scheme,
      network: String(settlement.network ?? terms.network),
      payer,
      asset: terms.asset,
      payTo: terms.payTo,
      amount: BigInt(charged),
      reference: TX_HASH.test(transaction) ? { transaction } : { commitment: transaction },
    };
  };

  return {
    key,
    offers,
    offersFor,

    async offerOnRefusal(req, res, route) {
      const extensions = await offersFor(req, route);
      const withOffers = (value: Record<string, unknown>) =>
        isObject(value.extensions) && value.extensions[OFFER_EXTENSION_KEY]
          ? value
          : { ...value, extensions: { ...(value.extensions as object), ...extensions } };
      const setHeader = res.setHeader.bind(res);
      res.setHeader = ((name: string, value: number | string | readonly string[]) => {
        if (name.toLowerCase() === PAYMENT_HEADERS[2].required.toLowerCase() && typeof value === "string") {
          const required = fromHeaderJson(value);
          if (required) return setHeader(name, toHeaderJson(withOffers(required)));
        }
        return setHeader(name, value);
      }) as Response["setHeader"];
      const json = res.json.bind(res);
      res.json = ((body?: unknown) => json(res.statusCode === 402 && isObject(body) ? withOffers(body) : body)) as Response["json"];
    },

    async signHttpAnswer(req, res, route, payer, text) {
      const header = settlementHeader(res);
      if (!header) return;
      try {
        const settlement = fromHeaderJson(header.value);
        if (!settlement) throw new Error(`the ${header.name} header is not base64 JSON`);
        const issued = await issueReceipt(
          key,
          {
            resourceUrl: links.url(req.path),
            request: { transport: "http", method: req.method, path: req.originalUrl, body: rawBodyOf(res) },
            answer: { transport: "http", body: text },
            payment: paymentOf(req, route, payer, settlement),
          },
          clock,
        );
        res.setHeader(header.name, withReceiptHeader(header.value, issued));
      } catch (err) {
        deps.log(err, "x402 receipt not issued: the paid answer goes out without it");
      }
    },

    async signToolCall(settlement, call, result) {
      const ext = settlement.extensions;
      const twin = isObject(ext) ? ((ext[RECEIPT_EXTENSION_KEY] as { info?: { receipt?: SignedReceipt } } | undefined)?.info?.receipt ?? undefined) : undefined;
      if (!twin) return settlement;
      try {
        return withReceipt(settlement, await rebindToToolCall(key, twin, call, result, clock));
      } catch (err) {
        deps.log(err, "x402 receipt of a tool call not issued: the paid result goes out without it");
        // the twin's receipt binds the loopback request, which the MCP client never saw: not passed on
        const { [RECEIPT_EXTENSION_KEY]: _twin, ...others } = ext as Record<string, unknown>;
        const { extensions: _all, ...rest } = settlement;
        return Object.keys(others).length > 0 ? { ...rest, extensions: others } : rest;
      }
    },
  };
}
