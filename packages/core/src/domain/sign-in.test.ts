/** The console's sign-in text (EIP-4361): exactly what the owner's wallet shows and the service rebuilds. */
import { describe, expect, it } from "vitest";
import { signInMessage } from "./sign-in";

const facts = {
  domain: "127.0.0.1:4020",
  uri: "http://127.0.0.1:4020/console",
  owner: "0x54c197ecbf8a49316a15874281499e3a1ef9131e" as const,
  safe: "0x4d5c934a1f30aadff5b4dc7283a85a0ffd878d48" as const,
  chainId: 8453,
  nonce: "0123456789abcdef0123456789abcdef",
  issuedAt: "2026-11-24T11:00:00.000Z",
  expiresAt: "2026-11-24T11:10:00.000Z",
};

describe("signInMessage", () => {
  it("is an EIP-4361 message naming the service, the owner, the Safe, the chain, the nonce and the window", () => {
    expect(signInMessage(facts)).toBe(
      [
        "127.0.0.1:4020 wants you to sign in with your Ethereum account:",
        "0x54C197ecBf8A49316A15874281499E3A1eF9131E",
        "",
        "Open the treasury console of the Safe 0x4D5C934A1F30aaDfF5b4DC7283a85a0FFd878d48 as one of its owners. Signing moves no funds.",
        "",
        "URI: http://127.0.0.1:4020/console",
        "Version: 1",
        "Chain ID: 8453",
        "Nonce: 0123456789abcdef0123456789abcdef",
        "Issued At: 2026-11-24T11:00:00.000Z",
        "Expiration Time: 2026-11-24T11:10:00.000Z",
        "Resources:",
        "- safe:0x4D5C934A1F30aaDfF5b4DC7283a85a0FFd878d48",
      ].join("\n"),
    );
  });

  it("changes with every fact it names", () => {
    const base = signInMessage(facts);
    for (const [k, v] of Object.entries({
      domain: "evil.example",
      uri: "https://evil.example/console",
      owner: "0x0000000000000000000000000000000000000001",
      safe: "0x0000000000000000000000000000000000000002",
      chainId: 42161,
      nonce: "fedcba9876543210fedcba9876543210",
      issuedAt: "2026-11-24T11:00:01.000Z",
      expiresAt: "2026-11-24T11:10:01.000Z",
    })) {
      expect(signInMessage({ ...facts, [k]: v }), k).not.toBe(base);
    }
  });
});
