/**
 * SIGN-IN-WITH-X proofs signed by the official x402 client helpers
 * (`createSIWxPayload`, `encodeSIWxHeader` from @x402/extensions) with viem
 * accounts, checked by the gateway's verifier: domain, exact uri, chain,
 * time, signature, and the binding to one request.
 */
import { hashMessage, recoverMessageAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  createSIWxPayload,
  encodeSIWxHeader,
  parseSIWxHeader,
  verifySIWxSignature,
  type EVMSigner,
  type SIWxExtension,
  type SIWxPayload,
} from "@x402/extensions/sign-in-with-x";
import {
  requestDigest,
  requestResource,
  signInWithXExtension,
  SIWX_EXTENSION_KEY,
  SIWX_HEADER,
  verifySignInWithX,
  type SIWxChallengeOptions,
  type SIWxExpectation,
} from "./sign-in-with-x";

const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");

const BASE = "https://treasury.example.com";
const PATH = "/v1/treasuries/t_1/withdraw";
const URL_ = `${BASE}${PATH}`;
const NOW = new Date("2026-03-01T12:00:00.000Z");
const CHAINS = [8453, 42161];
const BODY = { asset: "USDC", amount: "12.5", to: "0x000000000000000000000000000000000000dEaD" };
const KEY = "withdraw-0001";
const DIGEST = requestDigest("POST", PATH, KEY, BODY);

function challenge(over: Partial<SIWxChallengeOptions> = {}): SIWxExtension {
  return signInWithXExtension({
    publicBaseUrl: BASE,
    resourceUrl: URL_,
    chainIds: CHAINS,
    now: NOW,
    statement: "Withdraw from treasury t_1",
    requestDigest: DIGEST,
    ...over,
  });
}

/** sign a challenge (optionally edited) on a chain with the official client; answers the header */
async function sign(
  ext: SIWxExtension = challenge(),
  o: { chainId?: string; info?: Partial<SIWxExtension["info"]>; signer?: EVMSigner; requestUrl?: string } = {},
): Promise<string> {
  const payload = await createSIWxPayload(
    { ...ext.info, ...o.info, chainId: o.chainId ?? "eip155:8453", type: "eip191" },
    o.signer ?? account,
    o.requestUrl ?? URL_,
  );
  return encodeSIWxHeader(payload);
}

const expectation = (over: Partial<SIWxExpectation> = {}): SIWxExpectation => ({
  publicBaseUrl: BASE,
  resourceUrl: URL_,
  chainIds: CHAINS,
  now: new Date(NOW.getTime() + 20_000),
  maxAgeSeconds: 600,
  requestDigest: DIGEST,
  ...over,
});

const reencode = (header: string, edit: (p: SIWxPayload) => SIWxPayload) => encodeSIWxHeader(edit(parseSIWxHeader(header)));

describe("sign-in-with-x", () => {
  it("accepts a proof signed by the official client for this route and request", async () => {
    const ext = challenge();
    const header = await sign(ext);
    expect(await verifySignInWithX(header, expectation())).toEqual({
      ok: true,
      address: account.address,
      nonce: ext.info.nonce,
      chainId: 8453,
      expiresAt: new Date(NOW.getTime() + 300_000),
      method: "eip191",
    });
    // Arbitrum is a treasury chain too
    expect(await verifySignInWithX(await sign(challenge(), { chainId: "eip155:42161" }), expectation())).toMatchObject({ ok: true, chainId: 42161 });
    // and the official verifier agrees with the signature
    expect(await verifySIWxSignature(parseSIWxHeader(header))).toMatchObject({ isValid: true, payer: account.address });
  });

  it("the challenge it offers round-trips through the official client", async () => {
    const ext = challenge();
    expect(SIWX_EXTENSION_KEY).toBe("sign-in-with-x");
    expect(SIWX_HEADER).toBe("SIGN-IN-WITH-X");
    expect(ext.info).toMatchObject({
      domain: "treasury.example.com",
      uri: URL_,
      version: "1",
      issuedAt: NOW.toISOString(),
      expirationTime: new Date(NOW.getTime() + 300_000).toISOString(),
      resources: [URL_, requestResource(DIGEST)],
      statement: "Withdraw from treasury t_1",
    });
    expect(ext.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(challenge().info.nonce).not.toBe(ext.info.nonce);
    expect(ext.supportedChains).toEqual([
      { chainId: "eip155:8453", type: "eip191" },
      { chainId: "eip155:42161", type: "eip191" },
    ]);
    // a client picks a supported chain from the offer, as the stock client hook does
    const chosen = ext.supportedChains.find((c) => c.type === "eip191")!;
    const payload = await createSIWxPayload({ ...ext.info, ...chosen }, account, URL_);
    expect(payload).toMatchObject({ domain: ext.info.domain, uri: ext.info.uri, nonce: ext.info.nonce, chainId: "eip155:8453", address: account.address });
    // the JSON of the 401 body survives the trip
    const wire = JSON.parse(JSON.stringify({ extensions: { [SIWX_EXTENSION_KEY]: ext } })) as { extensions: Record<string, SIWxExtension> };
    const header = await sign(wire.extensions[SIWX_EXTENSION_KEY]);
    expect(await verifySignInWithX(header, expectation())).toMatchObject({ ok: true, address: account.address, nonce: ext.info.nonce });
  });

  it("refuses another domain", async () => {
    const ext = challenge({ publicBaseUrl: "https://evil.example.com", resourceUrl: `https://evil.example.com${PATH}` });
    const header = await sign(ext, { requestUrl: `https://evil.example.com${PATH}` });
    expect(await verifySignInWithX(header, expectation())).toMatchObject({ ok: false, reason: "domain_mismatch" });
  });

  it("refuses another uri, even on the same origin", async () => {
    const header = await sign(challenge({ resourceUrl: `${BASE}/v1/treasuries/t_1/exit` }));
    expect(await verifySignInWithX(header, expectation())).toMatchObject({ ok: false, reason: "uri_mismatch" });
    const other_ = await sign(challenge({ resourceUrl: `${BASE}/v1/treasuries/t_2/withdraw` }));
    expect(await verifySignInWithX(other_, expectation())).toMatchObject({ ok: false, reason: "uri_mismatch" });
  });

  it("refuses a stale issuedAt, and one from the future beyond 30 s of skew", async () => {
    const header = await sign();
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() + 601_000), maxAgeSeconds: 600 }))).toMatchObject({
      ok: false,
      reason: "stale",
    });
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() + 61_000), maxAgeSeconds: 60 }))).toMatchObject({
      ok: false,
      reason: "stale",
    });
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() - 20_000) }))).toMatchObject({ ok: true });
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() - 31_000) }))).toMatchObject({ ok: false, reason: "issued_in_future" });
  });

  it("refuses an expired message, and one not valid yet", async () => {
    const header = await sign(challenge({ expirationSeconds: 60 }));
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() + 59_000) }))).toMatchObject({
      ok: true,
      expiresAt: new Date(NOW.getTime() + 60_000),
    });
    expect(await verifySignInWithX(header, expectation({ now: new Date(NOW.getTime() + 60_000) }))).toMatchObject({ ok: false, reason: "expired" });
    const later = await sign(challenge(), { info: { notBefore: new Date(NOW.getTime() + 120_000).toISOString() } });
    expect(await verifySignInWithX(later, expectation())).toMatchObject({ ok: false, reason: "not_yet_valid" });
  });

  it("refuses a chain other than the treasury chains", async () => {
    const header = await sign(challenge(), { chainId: "eip155:1" });
    expect(await verifySignInWithX(header, expectation())).toMatchObject({ ok: false, reason: "chain_not_allowed" });
    // a proof signed for Base is not one for Arbitrum: the chain id is in the signed text
    const base = await sign();
    expect(
      await verifySignInWithX(
        reencode(base, (p) => ({ ...p, chainId: "eip155:42161" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(await verifySignInWithX(base, expectation({ chainIds: [42161] }))).toMatchObject({ ok: false, reason: "chain_not_allowed" });
  });

  it("refuses a tampered signature or payload, and another signer's claim", async () => {
    const header = await sign();
    const flip = (sig: string) => `${sig.slice(0, 10)}${sig[10] === "0" ? "1" : "0"}${sig.slice(11)}`;
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, signature: flip(p.signature) })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, signature: "0x1234" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, address: other.address })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, statement: "Sell everything" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, nonce: "ffffffffffffffffffffffffffffffff" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("refuses a proof whose resources do not name this request", async () => {
    const unbound = await sign(challenge({ requestDigest: undefined }));
    expect(parseSIWxHeader(unbound).resources).toEqual([URL_]);
    expect(await verifySignInWithX(unbound, expectation())).toMatchObject({ ok: false, reason: "request_not_bound" });
    // ...which is fine where the caller asks for no binding
    expect(await verifySignInWithX(unbound, expectation({ requestDigest: undefined }))).toMatchObject({ ok: true });
    // stripping the binding breaks the signature
    const bound = await sign();
    expect(
      await verifySignInWithX(
        reencode(bound, (p) => ({ ...p, resources: [URL_] })),
        expectation({ requestDigest: undefined }),
      ),
    ).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("refuses a proof bound to another body, key or method", async () => {
    const header = await sign();
    const otherBody = requestDigest("POST", PATH, KEY, { ...BODY, amount: "1250" });
    expect(otherBody).not.toBe(DIGEST);
    expect(await verifySignInWithX(header, expectation({ requestDigest: otherBody }))).toMatchObject({ ok: false, reason: "request_mismatch" });
    expect(await verifySignInWithX(header, expectation({ requestDigest: requestDigest("POST", PATH, "withdraw-0002", BODY) }))).toMatchObject({
      ok: false,
      reason: "request_mismatch",
    });
    // a client that binds its own request (instead of the challenge's) is accepted for that request only
    const mine = requestDigest("POST", PATH, "withdraw-0003", { ...BODY, amount: "1" });
    const own = await sign(challenge({ requestDigest: undefined }), { info: { resources: [URL_, requestResource(mine)] } });
    expect(await verifySignInWithX(own, expectation({ requestDigest: mine }))).toMatchObject({ ok: true });
    expect(await verifySignInWithX(own, expectation())).toMatchObject({ ok: false, reason: "request_mismatch" });
    // two bindings in one signature are refused
    const two = await sign(challenge(), { info: { resources: [URL_, requestResource(DIGEST), requestResource(mine)] } });
    expect(await verifySignInWithX(two, expectation())).toMatchObject({ ok: false, reason: "request_mismatch" });
  });

  it("digests requests canonically", () => {
    expect(requestDigest("post", PATH, KEY, { to: BODY.to, amount: BODY.amount, asset: BODY.asset, memo: undefined })).toBe(DIGEST);
    expect(requestDigest("POST", PATH, undefined, undefined)).toBe(requestDigest("POST", PATH, "", null));
    expect(requestDigest("POST", PATH, KEY, BODY)).not.toBe(requestDigest("POST", `${PATH}?x=1`, KEY, BODY));
    expect(DIGEST).toMatch(/^[0-9a-f]{64}$/);
  });

  it("verifies a contract wallet through the EIP-1271 hook, and fails closed", async () => {
    // a "Safe" whose single owner is `other`: its EIP-1271 answer is modelled by recovering the owner
    const safe = "0x1111111111111111111111111111111111111111" as const;
    const signer: EVMSigner = { address: safe, signMessage: ({ message }) => other.signMessage({ message }) };
    const header = await sign(challenge(), { signer });
    expect(await verifySignInWithX(header, expectation())).toMatchObject({ ok: false, reason: "bad_signature" });
    const seen: unknown[] = [];
    const hook = async (address: `0x${string}`, message: string, signature: Hex, chainId: number) => {
      seen.push({ address, chainId, hash: hashMessage(message) });
      return address === safe && (await recoverMessageAddress({ message, signature })) === other.address;
    };
    expect(await verifySignInWithX(header, expectation({ verifyContractSignature: hook }))).toMatchObject({
      ok: true,
      address: safe,
      method: "eip1271",
      chainId: 8453,
    });
    expect(seen).toHaveLength(1);
    expect(await verifySignInWithX(header, expectation({ verifyContractSignature: () => Promise.reject(new Error("rpc down")) }))).toMatchObject({
      ok: false,
      reason: "verifier_error",
    });
    // an EOA never reaches the hook
    seen.length = 0;
    expect(await verifySignInWithX(await sign(), expectation({ verifyContractSignature: hook }))).toMatchObject({ ok: true, method: "eip191" });
    expect(seen).toHaveLength(0);
  });

  it("refuses malformed headers and unsupported fields", async () => {
    const header = await sign();
    expect(await verifySignInWithX(undefined, expectation())).toMatchObject({ ok: false, reason: "malformed" });
    expect(await verifySignInWithX("not base64!", expectation())).toMatchObject({ ok: false, reason: "malformed" });
    expect(await verifySignInWithX(Buffer.from("{}").toString("base64"), expectation())).toMatchObject({ ok: false, reason: "malformed" });
    expect(await verifySignInWithX("A".repeat(9000), expectation())).toMatchObject({ ok: false, reason: "malformed" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, version: "2" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "unsupported_version" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, type: "ed25519" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "unsupported_type" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, nonce: "short" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "invalid_nonce" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, issuedAt: "yesterday" })),
        expectation(),
      ),
    ).toMatchObject({ ok: false, reason: "invalid_issued_at" });
    expect(
      await verifySignInWithX(
        reencode(header, (p) => ({ ...p, resources: [...(p.resources ?? []), "not a uri"] })),
        expectation({ requestDigest: undefined }),
      ),
    ).toMatchObject({ ok: false, reason: "invalid_message" });
  });
});
