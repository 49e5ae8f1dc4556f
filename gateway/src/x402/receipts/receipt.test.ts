/**
 * Receipts of paid answers: signed as the offer-receipt extension defines them and verified by the
 * extension's own verifier (`verifyReceiptSignatureJWS`); bound to the request and the answer so that a
 * changed request digest, answer digest, payer or amount fails, either at the signature (the signed payload
 * was edited) or at the binding (the receipt is shown with other bytes or facts); and the signing key is in
 * neither the receipt nor any error.
 */
import { inspect } from "node:util";
import {
  canonicalize,
  createJWS,
  extractJWSHeader,
  extractReceiptPayload,
  verifyReceiptSignatureJWS,
  type JWSSignedReceipt,
} from "@x402/extensions/offer-receipt";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../lib/clock";
import { jcs, sha256Hex, toolResultDigest } from "./digest";
import {
  issueReceipt,
  rebindToToolCall,
  receiptPayload,
  ReceiptInputError,
  type BoundReceiptPayload,
  type IssuedReceipt,
  type PaidAnswer,
  type PaidRequest,
  type ReceiptInput,
} from "./receipt";
import { generateReceiptKeyText, publishedReceiptKeys, RECEIPT_KEY_PREFIX, receiptKeyFromText } from "./receipt-key";
import { ReceiptCheckError, verifyReceipt, type ReceiptExpectation } from "./verify";

const KEY_TEXT = generateReceiptKeyText();
const key = receiptKeyFromText(KEY_TEXT);
const KEYS = publishedReceiptKeys([key]).keys;
const clock = new ManualClock(new Date("2026-07-01T10:00:00.000Z"));
const ISSUED_AT = Math.floor(clock.now().getTime() / 1000);

const PAYER = "0x857b06519E91e3A54538791bDbb0E22373e36b66";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const TX = "0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef";
const RESOURCE = "https://treasury.example.com/api/v1/treasuries/t_1/preview";
const REQUEST_BODY = '{"action":"supply","asset":"USDC","amount":"250.5"}';
const ANSWER_BODY = '{"envelope":{"to":"0xA238Dd80C259a72e81d7e4664a9801593F98d1c5","data":"0x617ba037"},"ltv_after_bps":4200}';

const httpRequest: PaidRequest = { transport: "http", method: "POST", path: "/api/v1/treasuries/t_1/preview?dry=1", body: Buffer.from(REQUEST_BODY) };
const httpAnswer: PaidAnswer = { transport: "http", body: Buffer.from(ANSWER_BODY) };
const payment: ReceiptInput["payment"] = {
  scheme: "exact",
  network: "base-sepolia",
  payer: PAYER,
  asset: USDC,
  payTo: PAY_TO,
  amount: 15_700n,
  reference: { transaction: TX },
};
const input: ReceiptInput = { resourceUrl: RESOURCE, request: httpRequest, answer: httpAnswer, payment };

const expectation = (over: Partial<ReceiptExpectation> = {}): ReceiptExpectation => ({
  keys: KEYS,
  request: httpRequest,
  answer: httpAnswer,
  payer: PAYER,
  amount: 15_700n,
  asset: USDC,
  payTo: PAY_TO,
  network: "eip155:84532",
  resourceUrl: RESOURCE,
  ...over,
});

const codeOf = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (err) {
    if (err instanceof ReceiptCheckError) return err.code;
    throw err;
  }
  return "verified";
};

/** the receipt with its signed payload edited and its signature kept */
function edited(receipt: JWSSignedReceipt, edit: (p: BoundReceiptPayload) => void): JWSSignedReceipt {
  const [header, body, signature] = receipt.signature.split(".");
  const payload = JSON.parse(Buffer.from(body!, "base64url").toString("utf8")) as BoundReceiptPayload;
  edit(payload);
  return { format: "jws", signature: `${header}.${Buffer.from(canonicalize(payload)).toString("base64url")}.${signature}` };
}

describe("a receipt of an HTTP answer", () => {
  it("verifies with the extension's own verifier, with the published key and with its did:jwk kid alone", async () => {
    const { receipt, payload } = await issueReceipt(key, input, clock);
    expect(receipt.format).toBe("jws");
    expect(extractJWSHeader(receipt.signature)).toEqual({ alg: "EdDSA", kid: key.kid });
    const withKey = await verifyReceiptSignatureJWS(receipt, KEYS[0]);
    const byKid = await verifyReceiptSignatureJWS(receipt);
    expect(withKey).toEqual(payload);
    expect(byKid).toEqual(payload);
    expect(extractReceiptPayload(receipt)).toEqual(payload);
  });

  it("states the spec's fields (CAIP-2 network, checksummed payer, issuedAt from the clock, the transaction) and the binding", async () => {
    const { payload } = await issueReceipt(key, { ...input, payment: { ...payment, payer: PAYER.toLowerCase() } }, clock);
    expect(payload).toEqual({
      version: 1,
      network: "eip155:84532",
      resourceUrl: RESOURCE,
      payer: PAYER,
      issuedAt: ISSUED_AT,
      transaction: TX,
      binding: {
        version: 1,
        digest: "sha-256",
        request: { transport: "http", method: "POST", path: "/api/v1/treasuries/t_1/preview?dry=1", body: sha256Hex(REQUEST_BODY) },
        answer: sha256Hex(ANSWER_BODY),
        payment: { scheme: "exact", asset: USDC, payTo: PAY_TO, amount: "15700", transaction: TX },
      },
    });
  });

  it("passes the agent's check when shown with the bytes it was issued for", async () => {
    const { receipt, payload } = await issueReceipt(key, input, clock);
    expect(await verifyReceipt(receipt, expectation({ transaction: TX, now: clock.now(), maxAgeSeconds: 60 }))).toEqual(payload);
  });

  describe("a signed payload edited after signing fails the extension's verifier", () => {
    const edits: [string, (p: BoundReceiptPayload) => void][] = [
      ["the request digest", (p) => void (p.binding.request = { ...p.binding.request, body: sha256Hex("{}") } as typeof p.binding.request)],
      ["the request path", (p) => void (p.binding.request = { ...p.binding.request, path: "/api/v1/treasuries/t_2/preview" } as typeof p.binding.request)],
      ["the answer digest", (p) => void (p.binding.answer = sha256Hex("{}"))],
      ["the payer", (p) => void (p.payer = "0x000000000000000000000000000000000000dEaD")],
      ["the amount", (p) => void (p.binding.payment.amount = "1")],
    ];
    for (const [what, edit] of edits) {
      it(what, async () => {
        const { receipt } = await issueReceipt(key, input, clock);
        const tampered = edited(receipt, edit);
        await expect(verifyReceiptSignatureJWS(tampered, KEYS[0])).rejects.toThrow(/signature verification failed/);
        await expect(verifyReceiptSignatureJWS(tampered)).rejects.toThrow(/signature verification failed/);
        expect(await codeOf(verifyReceipt(tampered, expectation()))).toBe("bad_signature");
      });
    }
    it("(the edit itself is well formed: re-signed, it verifies)", async () => {
      const { receipt } = await issueReceipt(key, input, clock);
      const payload = extractReceiptPayload(edited(receipt, (p) => void (p.binding.payment.amount = "1")));
      const resigned: JWSSignedReceipt = { format: "jws", signature: await createJWS(payload, key.signer) };
      expect(await codeOf(verifyReceipt(resigned, expectation()))).toBe("payment_mismatch");
    });
  });

  describe("an intact receipt shown with other facts fails the binding check", () => {
    const cases: [string, Partial<ReceiptExpectation>, string][] = [
      ["another request body (one byte)", { request: { ...httpRequest, body: Buffer.from(REQUEST_BODY.replace("250.5", "250.6")) } }, "request_mismatch"],
      [
        "the same JSON written otherwise",
        { request: { ...httpRequest, body: Buffer.from(JSON.stringify(JSON.parse(REQUEST_BODY), null, 1)) } },
        "request_mismatch",
      ],
      ["another query", { request: { ...httpRequest, path: "/api/v1/treasuries/t_1/preview?dry=0" } }, "request_mismatch"],
      ["another method", { request: { ...httpRequest, method: "PUT" } }, "request_mismatch"],
      ["a tool call instead", { request: { transport: "mcp", tool: "preview", arguments: JSON.parse(REQUEST_BODY) } }, "request_mismatch"],
      ["another answer (a space added)", { answer: { transport: "http", body: `${ANSWER_BODY} ` } }, "answer_mismatch"],
      ["another payer", { payer: "0x000000000000000000000000000000000000dEaD" }, "payer_mismatch"],
      ["another amount", { amount: 15_699n }, "payment_mismatch"],
      ["another asset", { asset: PAY_TO }, "payment_mismatch"],
      ["another recipient", { payTo: USDC }, "payment_mismatch"],
      ["another network", { network: "eip155:8453" }, "payment_mismatch"],
      ["another transaction", { transaction: `0x${"ab".repeat(32)}` }, "payment_mismatch"],
      ["another resource", { resourceUrl: "https://treasury.example.com/api/v1/treasuries/t_2/preview" }, "resource_mismatch"],
      ["an old receipt", { now: new Date(clock.now().getTime() + 3_601_000), maxAgeSeconds: 3600 }, "stale"],
      ["a receipt from the future", { now: new Date(clock.now().getTime() - 61_000) }, "stale"],
    ];
    for (const [what, over, code] of cases) {
      it(what, async () => {
        const { receipt } = await issueReceipt(key, input, clock);
        expect(await codeOf(verifyReceipt(receipt, expectation(over)))).toBe(code);
      });
    }
    it("the payer's case does not matter", async () => {
      const { receipt } = await issueReceipt(key, input, clock);
      expect(await codeOf(verifyReceipt(receipt, expectation({ payer: PAYER.toLowerCase() })))).toBe("verified");
    });
  });

  it("a receipt signed by another key verifies by its own kid, and is refused against the published key", async () => {
    const forger = receiptKeyFromText(generateReceiptKeyText());
    const { receipt } = await issueReceipt(forger, input, clock);
    // the extension's verifier alone trusts the key the receipt names: the pinned key is what makes it the gateway's
    await expect(verifyReceiptSignatureJWS(receipt)).resolves.toMatchObject({ payer: PAYER });
    expect(await codeOf(verifyReceipt(receipt, expectation()))).toBe("unknown_key");
    // a forger naming the gateway's kid fails the signature
    const [, body, sig] = receipt.signature.split(".");
    const header = Buffer.from(JSON.stringify({ alg: "EdDSA", kid: key.kid })).toString("base64url");
    expect(await codeOf(verifyReceipt({ format: "jws", signature: `${header}.${body}.${sig}` }, expectation()))).toBe("bad_signature");
  });

  it("an EIP-712 receipt is refused: it cannot carry the binding", async () => {
    const eip712 = {
      format: "eip712",
      payload: { version: 1, network: "eip155:84532", resourceUrl: RESOURCE, payer: PAYER, issuedAt: 1, transaction: "" },
      signature: "0x00",
    } as const;
    expect(await codeOf(verifyReceipt(eip712, expectation()))).toBe("unsupported_format");
  });

  it("a commitment instead of a transaction: no `transaction`, the commitment in the binding", async () => {
    const { receipt, payload } = await issueReceipt(
      key,
      { ...input, payment: { ...payment, scheme: "batch-settlement", reference: { commitment: "voucher:0xabc:17" } } },
      clock,
    );
    expect(payload.transaction).toBeUndefined();
    expect(payload.binding.payment).toEqual({ scheme: "batch-settlement", asset: USDC, payTo: PAY_TO, amount: "15700", commitment: "voucher:0xabc:17" });
    expect(await codeOf(verifyReceipt(receipt, expectation({ scheme: "batch-settlement" })))).toBe("verified");
  });
});

describe("a receipt of an MCP tool call", () => {
  const args = { treasury_id: "t_1", action: "supply", amount: "250.5", options: { slippage_bps: 30, note: "line 1\nline 2" } };
  const result = { content: [{ type: "text", text: ANSWER_BODY }], structuredContent: JSON.parse(ANSWER_BODY) as Record<string, unknown> };
  const toolInput: ReceiptInput = { ...input, request: { transport: "mcp", tool: "preview_action", arguments: args }, answer: { transport: "mcp", result } };
  const toolExpect = (over: Partial<ReceiptExpectation> = {}) => expectation({ request: toolInput.request, answer: toolInput.answer, ...over });

  it("binds the tool and RFC 8785 JSON of its arguments: key order does not matter, values do", async () => {
    const { receipt, payload } = await issueReceipt(key, toolInput, clock);
    expect(payload.binding.request).toEqual({ transport: "mcp", tool: "preview_action", arguments: sha256Hex(jcs(args)) });
    const reordered = { options: { note: "line 1\nline 2", slippage_bps: 30 }, amount: "250.5", action: "supply", treasury_id: "t_1" };
    expect(await codeOf(verifyReceipt(receipt, toolExpect({ request: { transport: "mcp", tool: "preview_action", arguments: reordered } })))).toBe("verified");
    const changed = { ...args, amount: "250.50" };
    expect(await codeOf(verifyReceipt(receipt, toolExpect({ request: { transport: "mcp", tool: "preview_action", arguments: changed } })))).toBe(
      "request_mismatch",
    );
    expect(await codeOf(verifyReceipt(receipt, toolExpect({ request: { transport: "mcp", tool: "prepare_action", arguments: args } })))).toBe(
      "request_mismatch",
    );
  });

  it("binds the result without its _meta (where the receipt travels)", async () => {
    const { receipt } = await issueReceipt(key, toolInput, clock);
    const received = { ...result, _meta: { "x402/payment-response": { success: true } } };
    expect(await codeOf(verifyReceipt(receipt, toolExpect({ answer: { transport: "mcp", result: received } })))).toBe("verified");
    const otherText = { ...result, content: [{ type: "text", text: `${ANSWER_BODY} ` }] };
    expect(await codeOf(verifyReceipt(receipt, toolExpect({ answer: { transport: "mcp", result: otherText } })))).toBe("answer_mismatch");
    expect(toolResultDigest(received)).toBe(toolResultDigest(result));
  });

  it("the REST twin's receipt is bound again to the tool call, its payment facts kept", async () => {
    const twin = await issueReceipt(key, input, clock);
    const later = new ManualClock(new Date(clock.now().getTime() + 1000));
    const mcp = await rebindToToolCall(key, twin.receipt, { tool: "preview_action", arguments: args }, result, later);
    expect(mcp.payload.binding.payment).toEqual(twin.payload.binding.payment);
    expect(mcp.payload.payer).toBe(PAYER);
    expect(mcp.payload.issuedAt).toBe(ISSUED_AT + 1);
    expect(await codeOf(verifyReceipt(mcp.receipt, toolExpect()))).toBe("verified");
    const forged = await issueReceipt(receiptKeyFromText(generateReceiptKeyText()), input, clock);
    await expect(rebindToToolCall(key, forged.receipt, { tool: "t", arguments: {} }, result, clock)).rejects.toThrow(ReceiptInputError);
  });
});

describe("what a receipt and an error show of the key", () => {
  const spellings = () => {
    const seed = Buffer.from(KEY_TEXT.slice(RECEIPT_KEY_PREFIX.length), "base64url");
    return [KEY_TEXT, seed.toString("base64url"), seed.toString("base64").replace(/=+$/, ""), seed.toString("hex")];
  };

  it("the receipt, its payload and extension hold no part of the seed", async () => {
    const issued: IssuedReceipt = await issueReceipt(key, input, clock);
    const views = [issued.receipt.signature, JSON.stringify(issued), inspect(issued, { depth: 20 }), Buffer.from(JSON.stringify(issued)).toString("base64")];
    for (const s of spellings()) for (const view of views) expect(view).not.toContain(s);
  });

  it("input errors are ReceiptInputErrors that hold no part of the seed", async () => {
    const bad: ReceiptInput[] = [
      { ...input, payment: { ...payment, network: "moonbase" } },
      { ...input, payment: { ...payment, payer: "not an address" } },
      { ...input, payment: { ...payment, payer: "0x1234" } },
      { ...input, payment: { ...payment, amount: -1n } },
      { ...input, payment: { ...payment, reference: { transaction: "0x12" } } },
      { ...input, payment: { ...payment, reference: { commitment: " " } } },
      { ...input, resourceUrl: "/relative" },
      { ...input, resourceUrl: `${RESOURCE}#frag` },
      { ...input, answer: { transport: "mcp", result: {} } },
    ];
    for (const b of bad) {
      const err = await issueReceipt(key, b, clock).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(ReceiptInputError);
      for (const s of spellings()) expect(`${err!.message} ${inspect(err)}`).not.toContain(s);
    }
  });

  it("a request that is not JSON is refused as a TypeError, without the key", () => {
    const notJson: ReceiptInput = {
      ...input,
      request: { transport: "mcp", tool: "t", arguments: { n: Number.NaN } },
      answer: { transport: "mcp", result: {} },
    };
    expect(() => receiptPayload(notJson, ISSUED_AT)).toThrow(TypeError);
    expect(() => receiptPayload({ ...input, request: { ...httpRequest, path: "api/v1" } }, ISSUED_AT)).toThrow(/must start with \//);
  });
});
