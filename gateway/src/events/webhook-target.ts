/**
 * Where a webhook may point: the service calls the URL a client gave it, so the URL must not make the service
 * reach what only the service can reach (server-side request forgery). The rule, checked when the endpoint is
 * registered and again at every delivery, on the addresses the name resolves to when the connection is made
 * (`guardedLookup`: a name that resolved to a public address at registration and to 10.0.0.5 later is refused
 * then):
 *
 * - `https` only; `http` only to a loopback address, and only when loopback targets are allowed (a gateway
 *   bound to a loopback address, the local stack: config WEBHOOK_ALLOW_LOOPBACK);
 * - every address the host resolves to is public unicast: private (10/8, 172.16/12, 192.168/16, fc00::/7),
 *   loopback (unless allowed), link-local (169.254/16 and its cloud metadata address, fe80::/10), carrier-grade
 *   NAT, multicast, unspecified, reserved and IPv4-mapped forms of any of these are refused;
 * - no user name or password in the URL; redirects are never followed (webhook-sender.ts).
 */
import dns from "node:dns";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { TreasuryError } from "@treasury/core/lib/errors";

export interface TargetPolicy {
  /** http://127.0.0.1:…, http://[::1]:… and http://localhost:… are allowed (the local stack) */
  allowLoopback: boolean;
}

/** why an address may not be called, or undefined when it may */
export function refusedAddress(address: string, policy: TargetPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  if (range === "unicast") return undefined;
  if (range === "loopback" && policy.allowLoopback) return undefined;
  return `${address} is a ${range} address`;
}

const LOOPBACK_NAMES = new Set(["localhost"]);

/** the URL, checked (throws webhook_url_refused with the reason); a name's addresses are checked again when connecting */
export function checkWebhookUrl(raw: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TreasuryError("webhook_url_refused", "the webhook URL is not a URL");
  }
  if (url.username || url.password) throw new TreasuryError("webhook_url_refused", "a webhook URL carries no user name or password");
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const literal = ipaddr.isValid(host);
  const loopbackHost =
    LOOPBACK_NAMES.has(host) ||
    (literal && refusedAddress(host, { allowLoopback: true }) === undefined && refusedAddress(host, { allowLoopback: false }) !== undefined);
  if (url.protocol === "http:") {
    if (!(policy.allowLoopback && loopbackHost)) {
      throw new TreasuryError("webhook_url_refused", policy.allowLoopback ? "a webhook URL is https, or http to a loopback address" : "a webhook URL is https");
    }
  } else if (url.protocol !== "https:") {
    throw new TreasuryError("webhook_url_refused", "a webhook URL is https");
  }
  if (LOOPBACK_NAMES.has(host) && !policy.allowLoopback) throw new TreasuryError("webhook_url_refused", "localhost is not a public address");
  if (literal) {
    const why = refusedAddress(host, policy);
    if (why) throw new TreasuryError("webhook_url_refused", `the webhook's host is not a public address: ${why}`);
  }
  return url;
}

/** the error a refused address is connected with (the delivery's last error says it) */
export class RefusedAddress extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RefusedAddress";
  }
}

/** `lookup` for http(s).request: resolves as the system does, and refuses the connection if any address is not allowed */
export function guardedLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error | null, a: string, f?: number) => void)(err, "", 0);
      const list = addresses as dns.LookupAddress[];
      const refused = list.map((a) => refusedAddress(a.address, policy)).find((why) => why !== undefined);
      if (refused || list.length === 0) {
        return (callback as (e: Error | null, a: string, f?: number) => void)(
          new RefusedAddress(`refused: ${hostname} resolves to ${refused ?? "nothing"}`),
          "",
          0,
        );
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      (callback as (e: null, a: string, f: number) => void)(null, list[0]!.address, list[0]!.family);
    });
  };
}
