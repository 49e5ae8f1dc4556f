/** The facilitator client: the requests and answers of x402's useFacilitator, over Node's HTTP client. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFacilitator } from "x402/verify";
import type { PaymentPayload, PaymentRequirements } from "x402/types";
import { startScriptedServer, type ScriptedServer } from "../../../test/helpers/scripted-server";
import { facilitatorClient } from "./facilitator-client";

let scripted: ScriptedServer;
let url: string;
beforeAll(async () => {
  scripted = await startScriptedServer();
  url = scripted.url;
});
afterAll(() => scripted.close());
/** what the next request is answered */
const answerWith = (a: { status: number; body: string }) => (scripted.answer = () => a);

const payment = {
  x402Version: 1,
  scheme: "exact",
  network: "base-sepolia",
  payload: {
    signature: `0x${"11".repeat(65)}`,
    authorization: {
      from: "0x1111111111111111111111111111111111111111",
      to: "0x2222222222222222222222222222222222222222",
      value: 10_000n,
      validAfter: "0",
      validBefore: "99999999999",
      nonce: `0x${"ab".repeat(32)}`,
    },
  },
} as unknown as PaymentPayload;
const requirements = {
  scheme: "exact",
  network: "base-sepolia",
  maxAmountRequired: "10000",
  resource: "http://x/api/v1/health",
  description: "",
  mimeType: "application/json",
  payTo: "0x2222222222222222222222222222222222222222",
  maxTimeoutSeconds: 60,
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
} as PaymentRequirements;
const config = () => ({
  url: url as `${string}://${string}`,
  createAuthHeaders: async () => ({ verify: { Authorization: "Bearer v" }, settle: { Authorization: "Bearer s" }, supported: {} }),
});

/** the same call through x402's client and this one: what the facilitator saw, and what each answered or threw */
async function both(what: "verify" | "settle") {
  const outcome = async (run: () => Promise<unknown>) =>
    run().then(
      (value) => ({ value }),
      (err: Error) => ({ error: `${err.constructor.name}: ${err.message}` }),
    );
  const seen = scripted.seen;
  seen.length = 0;
  const stock = await outcome(() => useFacilitator(config())[what](payment, requirements));
  const ours = await outcome(() => facilitatorClient(config())[what](payment, requirements));
  expect(seen).toHaveLength(2);
  return { stock, ours, requests: seen.slice() };
}

describe("facilitator client", () => {
  it("sends what x402's useFacilitator sends and answers what it answers", async () => {
    for (const what of ["verify", "settle"] as const) {
      const bodies =
        what === "verify"
          ? [
              { isValid: true, payer: "0x1111111111111111111111111111111111111111" },
              { isValid: false, invalidReason: "insufficient_funds" },
            ]
          : [{ success: true, transaction: "0xabc", network: "base-sepolia" }];
      for (const b of bodies) {
        answerWith({ status: 200, body: JSON.stringify(b) });
        const { stock, ours, requests } = await both(what);
        expect(ours).toEqual(stock);
        expect(ours).toEqual({ value: b });
        expect(requests[1]).toEqual(requests[0]);
        expect(requests[1]).toMatchObject({
          method: "POST",
          url: `/${what}`,
          contentType: "application/json",
          auth: what === "verify" ? "Bearer v" : "Bearer s",
        });
        expect((requests[1]!.body as { paymentPayload: { payload: { authorization: { value: unknown } } } }).paymentPayload.payload.authorization.value).toBe(
          "10000",
        ); // bigints as strings
      }
    }
  });

  it("throws what x402's client throws: a typed error for a refusal with a body, an error for anything else", async () => {
    for (const [what, status, body] of [
      ["verify", 400, JSON.stringify({ isValid: false, invalidReason: "invalid_request" })],
      ["settle", 500, JSON.stringify({ success: false, errorReason: "x", transaction: "", network: "base-sepolia" })],
      ["verify", 502, JSON.stringify({ error: "bad gateway" })],
      ["settle", 200, JSON.stringify({ nothing: true })],
      ["verify", 200, "not json"],
    ] as const) {
      answerWith({ status, body });
      const { stock, ours } = await both(what);
      expect("error" in ours, `${what} ${status} ${body}`).toBe(true);
      // the same error (a body that is not JSON: each runtime words its parse error its own way)
      if (body !== "not json") expect(ours).toEqual(stock);
    }
  });

  it("fails when the facilitator cannot be reached", async () => {
    await expect(facilitatorClient({ url: "http://127.0.0.1:1" }).verify(payment, requirements)).rejects.toThrow();
  });
});

describe("facilitator client connections", () => {
  it("a call after the server closed an idle connection goes out on a new one", async () => {
    // a server that closes idle connections after 1 s and says so
    const s = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ isValid: true }));
      });
    });
    s.keepAliveTimeout = 1_000;
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
    try {
      const client = facilitatorClient({ url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` });
      expect(await client.verify(payment, requirements)).toEqual({ isValid: true });
      await new Promise((r) => setTimeout(r, 1_100)); // the server has closed it by now
      expect(await client.verify(payment, requirements)).toEqual({ isValid: true });
    } finally {
      s.close();
    }
  });
});
