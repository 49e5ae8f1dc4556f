import { describe, expect, it } from "vitest";
import { TreasuryError } from "@treasury/core/lib/errors";
import { checkWebhookUrl, guardedLookup, refusedAddress, RefusedAddress } from "./webhook-target";

const STRICT = { allowLoopback: false };
const LOCAL = { allowLoopback: true };

const refusal = (url: string, policy = STRICT): string | undefined => {
  try {
    checkWebhookUrl(url, policy);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(TreasuryError);
    expect((err as TreasuryError).code).toBe("webhook_url_refused");
    return (err as TreasuryError).shortMessage;
  }
};

const lookup = (host: string, policy = STRICT, all = false) =>
  new Promise<{ err: Error | null; address: unknown }>((resolve) =>
    guardedLookup(policy)(host, { all } as never, ((err: Error | null, address: unknown) => resolve({ err, address })) as never),
  );

describe("webhook targets", () => {
  it("takes a public unicast address, and refuses every other range, IPv4-mapped forms included", () => {
    expect(refusedAddress("93.184.216.34", STRICT)).toBeUndefined();
    expect(refusedAddress("2606:2800:220:1:248:1893:25c8:1946", STRICT)).toBeUndefined();
    for (const ip of [
      "10.1.2.3",
      "172.16.0.1",
      "192.168.0.1",
      "127.0.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "fe80::1",
      "fc00::1",
      "::",
      "::ffff:10.0.0.1",
      "::ffff:127.0.0.1",
    ])
      expect(refusedAddress(ip, STRICT), ip).toMatch(/ is a /);
    expect(refusedAddress("not-an-ip", STRICT)).toMatch(/not an IP/);
    // loopback, and only loopback, on a local stack
    expect(refusedAddress("127.0.0.1", LOCAL)).toBeUndefined();
    expect(refusedAddress("::1", LOCAL)).toBeUndefined();
    expect(refusedAddress("10.0.0.1", LOCAL)).toMatch(/private/);
    expect(refusedAddress("169.254.169.254", LOCAL)).toMatch(/linkLocal/);
  });

  it("takes https to a name or a public address; http only to loopback on a local stack", () => {
    expect(refusal("https://hooks.example.com/treasury")).toBeUndefined();
    expect(refusal("https://93.184.216.34:8443/x")).toBeUndefined();
    expect(refusal("http://hooks.example.com/x")).toBe("a webhook URL is https");
    expect(refusal("http://127.0.0.1:9000/x")).toBe("a webhook URL is https");
    expect(refusal("https://localhost/x")).toMatch(/localhost is not a public address/);
    expect(refusal("https://[::1]/x")).toMatch(/not a public address/);
    expect(refusal("http://127.0.0.1:9000/x", LOCAL)).toBeUndefined();
    expect(refusal("http://localhost:9000/x", LOCAL)).toBeUndefined();
    expect(refusal("http://[::1]:9000/x", LOCAL)).toBeUndefined();
    expect(refusal("http://10.0.0.1/x", LOCAL)).toBe("a webhook URL is https, or http to a loopback address");
    expect(refusal("https://10.0.0.1/x", LOCAL)).toMatch(/private/);
    expect(refusal("ftp://example.com/x")).toBe("a webhook URL is https");
    expect(refusal("https://u:p@example.com/x")).toMatch(/no user name or password/);
    expect(refusal("::")).toMatch(/not a URL/);
  });

  it("checks what a name resolves to when connecting: a name that resolves to loopback is refused unless allowed", async () => {
    const refused = await lookup("localhost");
    expect(refused.err).toBeInstanceOf(RefusedAddress);
    expect(refused.err!.message).toMatch(/localhost resolves to .* loopback/);
    const allowed = await lookup("localhost", LOCAL);
    expect(allowed.err).toBeNull();
    expect(String(allowed.address)).toMatch(/^(127\.0\.0\.1|::1)$/);
    const all = await lookup("localhost", LOCAL, true);
    expect(Array.isArray(all.address)).toBe(true);
    const missing = await lookup("no-such-host.invalid");
    expect(missing.err).not.toBeNull();
  });
});
