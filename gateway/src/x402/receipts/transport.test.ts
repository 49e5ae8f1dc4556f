/**
 * Where receipts and offers travel, read back by the extension's own client functions: an HTTP answer over
 * a real server (PAYMENT-RESPONSE and x402 v1's X-PAYMENT-RESPONSE, `extractReceiptFromResponse`, the bytes
 * the client actually received), an MCP tool result through the MCP SDK's client and server
 * (`_meta["x402/payment-response"]`), and a 402's signed offers (`verifyOfferSignatureJWS`,
 * `findAcceptsObjectFromSignedOffer`, `verifyReceiptMatchesOffer`).
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureJWS,
  type JWSSignedOffer,
  type SignedReceipt,
} from "@x402/extensions/offer-receipt";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { settleResponseHeader } from "x402/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../../lib/clock";
import { PAYMENT_HEADERS, toHeaderJson } from "../payment-match";
import { signOffers } from "./offer";
import { issueReceipt, RECEIPT_EXTENSION_KEY, RECEIPT_MCP_META, withReceipt, withReceiptHeader, type PaymentFacts } from "./receipt";
import { generateReceiptKeyText, publishedReceiptKeys, RECEIPT_KEYS_PATH, receiptKeyFromText } from "./receipt-key";
import { verifyReceipt } from "./verify";

const key = receiptKeyFromText(generateReceiptKeyText());
const KEYS = publishedReceiptKeys([key]).keys;
const PAYER = "0x857b06519E91e3A54538791bDbb0E22373e36b66";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const TX = `0x${"5a".repeat(32)}`;
const payment: PaymentFacts = {
  scheme: "exact",
  network: "eip155:84532",
  payer: PAYER,
  asset: USDC,
  payTo: PAY_TO,
  amount: 15_700n,
  reference: { transaction: TX },
};
const settlement = { success: true, transaction: TX, network: "eip155:84532", payer: PAYER };

describe("HTTP: the receipt in the payment response header", () => {
  let base = "";
  let close: () => Promise<void>;
  beforeAll(async () => {
    const app = express();
    app.get(RECEIPT_KEYS_PATH, (_req, res) => void res.json(publishedReceiptKeys([key])));
    // a paid answer: the request's bytes as received, the answer's bytes as sent, the receipt in the version's header
    app.post("/api/v1/paid", express.raw({ type: "*/*" }), async (req, res) => {
      const version = req.header(PAYMENT_HEADERS[1].payment) ? 1 : 2;
      const answer = Buffer.from(JSON.stringify({ echo: JSON.parse((req.body as Buffer).toString("utf8")), note: "ünïcode ✓" }));
      const issued = await issueReceipt(
        key,
        {
          resourceUrl: `${base}/api/v1/paid`,
          request: { transport: "http", method: req.method, path: req.originalUrl, body: req.body as Buffer },
          answer: { transport: "http", body: answer },
          payment,
        },
        systemClock,
      );
      const header =
        version === 2
          ? toHeaderJson(settlement)
          : settleResponseHeader({ ...settlement, network: "base-sepolia" } as Parameters<typeof settleResponseHeader>[0]);
      res.setHeader(PAYMENT_HEADERS[version].response, withReceiptHeader(header, issued));
      res.setHeader("Content-Type", "application/json; charset=utf-8");
      res.end(answer);
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((r) => server.close(() => r()));
  });
  afterAll(async () => close());

  for (const version of [2, 1] as const) {
    it(`x402 v${version}: the extension's client finds it, the extension's verifier checks it, the received bytes match it`, async () => {
      const sent = '{"b":1,  "a":[1,2]}';
      const res = await fetch(`${base}/api/v1/paid?q=1`, { method: "POST", body: sent, headers: { [PAYMENT_HEADERS[version].payment]: "proof" } });
      const received = new Uint8Array(await res.arrayBuffer());
      const receipt = extractReceiptFromResponse(res);
      expect(receipt?.format).toBe("jws");
      const jwks = (await (await fetch(`${base}${RECEIPT_KEYS_PATH}`)).json()) as ReturnType<typeof publishedReceiptKeys>;
      const payload = await verifyReceiptSignatureJWS(receipt as Extract<SignedReceipt, { format: "jws" }>, jwks.keys[0]);
      expect(payload).toMatchObject({ version: 1, network: "eip155:84532", resourceUrl: `${base}/api/v1/paid`, payer: PAYER, transaction: TX });
      const expectation = {
        keys: jwks.keys,
        request: { transport: "http" as const, method: "POST", path: "/api/v1/paid?q=1", body: sent },
        answer: { transport: "http" as const, body: received },
        payer: PAYER,
        amount: 15_700n,
      };
      await expect(verifyReceipt(receipt!, expectation)).resolves.toMatchObject({ payer: PAYER });
      await expect(verifyReceipt(receipt!, { ...expectation, request: { ...expectation.request, path: "/api/v1/paid?q=2" } })).rejects.toMatchObject({
        code: "request_mismatch",
      });
      // the settlement's own fields are untouched beside the extension
      const decoded = JSON.parse(Buffer.from(res.headers.get(PAYMENT_HEADERS[version].response)!, "base64").toString("utf8")) as Record<string, unknown>;
      expect(decoded).toMatchObject({ success: true, transaction: TX, payer: PAYER, network: version === 2 ? "eip155:84532" : "base-sepolia" });
      expect(Object.keys(decoded.extensions as object)).toEqual([RECEIPT_EXTENSION_KEY]);
    });
  }
});

describe("MCP: the receipt in the settlement of _meta", () => {
  it("survives the MCP SDK's client and server: the arguments sent and the result received match it", async () => {
    const server = new Server({ name: "receipts", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const args = request.params.arguments ?? {};
      const result = { content: [{ type: "text" as const, text: JSON.stringify({ ok: true, args }) }], structuredContent: { ok: true, args } };
      const issued = await issueReceipt(
        key,
        {
          resourceUrl: "https://treasury.example.com/api/v1/paid",
          request: { transport: "mcp", tool: request.params.name, arguments: args },
          answer: { transport: "mcp", result },
          payment,
        },
        new ManualClock(),
      );
      return { ...result, _meta: { [RECEIPT_MCP_META]: withReceipt(settlement, issued) } };
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(clientSide);
    try {
      const args = { z: [1, { y: "é\n" }], a: 0.5 };
      const received = JSON.parse(JSON.stringify(await client.callTool({ name: "paid_tool", arguments: args }))) as Record<string, unknown>;
      const meta = (received._meta as Record<string, { extensions: Record<string, { info: { receipt: SignedReceipt } }> }>)[RECEIPT_MCP_META]!;
      expect(meta).toMatchObject(settlement);
      const receipt = meta.extensions[RECEIPT_EXTENSION_KEY]!.info.receipt;
      await expect(verifyReceiptSignatureJWS(receipt as Extract<SignedReceipt, { format: "jws" }>, KEYS[0])).resolves.toMatchObject({ payer: PAYER });
      const expectation = {
        keys: KEYS,
        request: { transport: "mcp" as const, tool: "paid_tool", arguments: args },
        answer: { transport: "mcp" as const, result: received },
      };
      await expect(verifyReceipt(receipt, { ...expectation, amount: 15_700n })).resolves.toMatchObject({ transaction: TX });
      await expect(verifyReceipt(receipt, { ...expectation, request: { ...expectation.request, arguments: { ...args, a: 0.25 } } })).rejects.toMatchObject({
        code: "request_mismatch",
      });
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe("offers in the 402", () => {
  const RESOURCE = "https://treasury.example.com/api/v1/treasuries/t_1/preview";
  const v2: PaymentRequirements = { scheme: "exact", network: "eip155:84532", amount: "15700", asset: USDC, payTo: PAY_TO, maxTimeoutSeconds: 120, extra: {} };
  const v1 = { scheme: "exact", network: "base-sepolia", maxAmountRequired: "15700", asset: USDC, payTo: PAY_TO, maxTimeoutSeconds: 120 };

  it("one JWS offer per entry, verified by the extension and matched to its entry", async () => {
    const clock = new ManualClock(new Date("2026-07-01T10:00:00.000Z"));
    const ext = await signOffers(key, RESOURCE, [v2], clock);
    const required = { x402Version: 2, resource: { url: RESOURCE }, accepts: [v2], extensions: { [RECEIPT_EXTENSION_KEY]: ext } } as unknown as PaymentRequired;
    const offers = extractOffersFromPaymentRequired(required) as JWSSignedOffer[];
    expect(offers).toHaveLength(1);
    expect(offers[0]!.acceptIndex).toBe(0);
    const payload = await verifyOfferSignatureJWS(offers[0]!, KEYS[0]);
    expect(payload).toEqual({
      version: 1,
      resourceUrl: RESOURCE,
      scheme: "exact",
      network: "eip155:84532",
      asset: USDC,
      payTo: PAY_TO,
      amount: "15700",
      validUntil: Math.floor(clock.now().getTime() / 1000) + 120,
    });
    expect(findAcceptsObjectFromSignedOffer(decodeSignedOffers(offers)[0]!, [v2])).toBe(v2);
  });

  it("a v1 entry is offered in CAIP-2 with `amount`, the same terms as its v2 twin", async () => {
    const clock = new ManualClock();
    const [fromV1, fromV2] = (await signOffers(key, RESOURCE, [v1, v2], clock)).info.offers.map((o) => decodeSignedOffers([o])[0]!);
    expect({ ...fromV1, signedOffer: undefined, acceptIndex: undefined }).toEqual({ ...fromV2, signedOffer: undefined, acceptIndex: undefined });
    expect(fromV1!.network).toBe("eip155:84532");
  });

  it("the receipt of the paid answer matches its offer by the extension's own check", async () => {
    const offer = decodeSignedOffers((await signOffers(key, RESOURCE, [v2], systemClock)).info.offers)[0]!;
    const { receipt } = await issueReceipt(
      key,
      { resourceUrl: RESOURCE, request: { transport: "http", method: "GET", path: "/x", body: "" }, answer: { transport: "http", body: "{}" }, payment },
      systemClock,
    );
    expect(verifyReceiptMatchesOffer(receipt, offer, [PAYER.toLowerCase()])).toBe(true);
    expect(verifyReceiptMatchesOffer(receipt, offer, ["0x000000000000000000000000000000000000dEaD"])).toBe(false);
  });
});
