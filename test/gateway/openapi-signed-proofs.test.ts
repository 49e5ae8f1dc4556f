/**
 * A signed statement's form is the document's: `issued_at` a date-time (RFC 3339 as zod reads it, the
 * pattern says which), `signature` whole bytes (65 or more: r, s, v, or what a contract wallet's EIP-1271
 * takes), a nonce of the statement's pattern. What the document refuses the server answers with a typed
 * 400 `invalid_request` naming the member; what it allows is refused only by the proof's state: a
 * signature that does not verify, a time outside the window, a nonce already spent (400
 * `invalid_ownership_proof` for a treasury's owner, 401 `unauthorized` for a console sign-in).
 */
import fc from "fast-check";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { ResponseValidator } from "../helpers/openapi";
import { SchemaArbitraries } from "../helpers/schema-sample";

let gw: TestGateway;
let doc: any;
let v: ResponseValidator;
const account = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await call(gw.url, "GET", "/openapi.json")).body;
  v = new ResponseValidator(doc);
});
afterAll(() => gw?.close());

/** does the document allow `value` as a `schema` component */
const allows = (schema: string, value: unknown) => v.allows(`#/components/schemas/${schema}`, value);

async function statement() {
  const q = new URLSearchParams({ wallet_address: account.address });
  return (await call(gw.url, "GET", `/api/v1/treasuries/ownership-statement?${q}`)).body;
}

const register = async (ownership_proof: Record<string, unknown>) => {
  const r = await call(gw.url, "POST", "/api/v1/treasuries", { body: { wallet_address: account.address, ownership_proof } });
  v.check("POST", "/api/v1/treasuries", r.status, r.body);
  return r;
};

describe("a signed ownership proof", () => {
  const proof = { signature: `0x${"ab".repeat(65)}`, nonce: "n-0123456789abcdef", issued_at: "2026-06-25T12:00:00.000Z" };

  it("the document refuses what the server cannot read as a proof: a signature of half a byte, a time that is not one", () => {
    expect(allows("SignedProof", proof)).toBe(true);
    for (const signature of ["0xe", "0x", `0x${"ab".repeat(64)}`, `0x${"ab".repeat(65)}e`])
      expect(allows("SignedProof", { ...proof, signature }), signature).toBe(false);
    for (const issued_at of ["", "yesterday", "2026-06-25", "2026-06-25 12:00:00Z", "2026-06-25T12:00Z"])
      expect(allows("SignedProof", { ...proof, issued_at }), issued_at).toBe(false);
    for (const issued_at of ["2026-06-25T12:00:00Z", "2026-06-25T14:00:00.5+02:00", "2026-06-25T12:00:00.123456789Z"])
      expect(allows("SignedProof", { ...proof, issued_at }), issued_at).toBe(true);
  });

  it("what the document refuses is a typed 400 invalid_request naming the member", async () => {
    for (const [member, bad] of [
      ["signature", { signature: "0xe" }],
      ["issued_at", { issued_at: "yesterday" }],
    ] as const) {
      const r = await register({ ...proof, ...bad });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toBe("invalid_request");
      expect(r.body.details.map((d: { field: string }) => d.field)).toContain(`ownership_proof.${member}`);
    }
  });

  it("a well-formed proof that does not verify is refused by its state: invalid_ownership_proof", async () => {
    const s = await statement();
    const r = await register({ ...proof, nonce: s.nonce, issued_at: s.issued_at });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_ownership_proof");
  });

  it("any signature the document allows, on a fresh statement, is refused by the proof's state only", async () => {
    const signatures = new SchemaArbitraries(doc).of(doc.components.schemas.SignedProof.properties.signature);
    await fc.assert(
      fc.asyncProperty(signatures, async (signature) => {
        const s = await statement();
        const r = await register({ signature, nonce: s.nonce, issued_at: s.issued_at });
        expect(r.status, r.text).toBe(400);
        expect(r.body.error, r.text).toBe("invalid_ownership_proof");
      }),
      { numRuns: 20, seed: 7 },
    );
  });

  it("a time in any form the document allows is read as that time: a proof signed with it registers", async () => {
    const s = await statement();
    // the same instant, written with an offset and a fraction the statement did not use
    const t = new Date(Date.parse(s.issued_at));
    const issued_at = `${new Date(t.getTime() + 2 * 3600_000).toISOString().slice(0, 19)}.5+02:00`;
    const signature = await account.signTypedData({ ...s.typed_data, message: { ...s.typed_data.message, issuedAt: issued_at } });
    const r = await register({ signature, nonce: s.nonce, issued_at });
    expect(r.status, r.text).toBe(200);
    expect(r.body.ownership).toBe("proven");
  });
});

describe("a console sign-in", () => {
  const body = {
    owner: account.address,
    safe: account.address,
    nonce: "n-0123456789abcdef",
    issued_at: new Date().toISOString(),
    signature: `0x${"ab".repeat(64)}1b`,
  };
  const signIn = async (b: Record<string, unknown>) => {
    const r = await call(gw.url, "POST", "/api/v1/console/sessions", { body: b });
    v.check("POST", "/api/v1/console/sessions", r.status, r.body);
    return r;
  };

  it("its time and nonce are stated by the document and refused as invalid_request when malformed", async () => {
    expect(allows("ConsoleSessionRequest", body)).toBe(true);
    for (const [member, bad] of [
      ["issued_at", { issued_at: "yesterday" }],
      ["nonce", { nonce: "short" }],
    ] as const) {
      expect(allows("ConsoleSessionRequest", { ...body, ...bad }), member).toBe(false);
      const r = await signIn({ ...body, ...bad });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toBe("invalid_request");
      expect(r.body.details.map((d: { field: string }) => d.field)).toContain(member);
    }
  });

  it("a well-formed sign-in is refused by state: no managed treasury for the Safe", async () => {
    const r = await signIn(body);
    expect(r.status).toBe(404);
    expect(r.body.error).toBe("treasury_not_found");
  });
});
