/**
 * A sign-in whose signature is not its address's own key's makes no chain call for a wallet no treasury
 * stands behind: the treasury is looked up first, EIP-1271 is asked only of an address with code, and an
 * ERC-6492 wrapper (a factory call of the signer's choosing, run by the node to deploy a wallet first) is
 * refused unread. The chain is a scripted JSON-RPC endpoint that records every call it is asked.
 */
import { createSIWxPayload, encodeSIWxHeader, parseSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { concat, encodeAbiParameters, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { startScriptedServer, type ScriptedServer } from "../helpers/scripted-server";

const PATH = "/api/v1/treasury";
const ERC6492_SUFFIX = "0x6492649264926492649264926492649264926492649264926492649264926492";

let rpc: ScriptedServer;
let gw: TestGateway;
beforeAll(async () => {
  // a JSON-RPC node on Base's chain id that answers nothing else: every call it is asked is recorded
  rpc = await startScriptedServer((body: { id: number; method: string }) => ({
    status: 200,
    body: JSON.stringify(
      body.method === "eth_chainId"
        ? { jsonrpc: "2.0", id: body.id, result: "0x2105" }
        : { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "no" } },
    ),
  }));
  gw = await startTestGateway({ BASE_RPC_URL: rpc.url });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  rpc?.close();
});

const chainCalls = () => rpc.seen.map((s) => (s.body as { method: string }).method).filter((m) => m === "eth_call" || m === "eth_getCode");

describe("sign-in-with-x's contract signatures", () => {
  it("a bad signature for a wallet with no treasury, plain or ERC-6492-wrapped with a factory, costs no chain call", async () => {
    const challenge = await call(gw.url, "GET", PATH);
    expect([401, 402]).toContain(challenge.status);
    const info = challenge.body.extensions["sign-in-with-x"].info;
    const signer = privateKeyToAccount(generatePrivateKey());
    const victim = privateKeyToAccount(generatePrivateKey()).address;
    const signed = await createSIWxPayload({ ...info, chainId: "eip155:8453", type: "eip191" }, signer, `${gw.url}${PATH}`);
    const factoryCall = encodeAbiParameters(
      [{ type: "address" }, { type: "bytes" }, { type: "bytes" }],
      ["0x000000000000000000000000000000000000dEaD", "0xdeadbeef", signed.signature as Hex],
    );
    for (const signature of [signed.signature, concat([factoryCall, ERC6492_SUFFIX])]) {
      rpc.seen.length = 0;
      const header = encodeSIWxHeader({ ...parseSIWxHeader(encodeSIWxHeader(signed)), address: victim, signature });
      const r = await call(gw.url, "GET", PATH, { headers: { "sign-in-with-x": header } });
      expect(r.status, JSON.stringify(r.body)).toBe(401);
      expect(r.body.error).toBe("unauthorized");
      expect(chainCalls()).toEqual([]);
    }
  });
});
