/**
 * One webhook delivery over HTTP, signed as Standard Webhooks specifies (the `standardwebhooks` package,
 * which Svix's and Standard Webhooks' receivers verify with the same secret): headers `webhook-id` (the
 * event's id: a receiver deduplicates on it), `webhook-timestamp` (seconds) and `webhook-signature`
 * (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint's `whsec_` secret). The body is
 * the event as every route carries it (TreasuryEvent).
 *
 * A 2xx answer delivers; anything else is a failed attempt: another status, a redirect (never followed), a
 * timeout, a refused or unreachable address (webhook-target.ts checks the URL and every address it connects to).
 */
import http from "node:http";
import https from "node:https";
import { Webhook } from "standardwebhooks";
import type { TreasuryEvent } from "@treasury/core/schemas/events";
import { checkWebhookUrl, guardedLookup, type TargetPolicy } from "./webhook-target";

export type SendOutcome = { ok: true; status: number } | { ok: false; error: string };

/** the headers and body of an event's delivery to an endpoint with this secret, signed at `at` */
export function signedDelivery(event: TreasuryEvent, secret: string, at: Date): { headers: Record<string, string>; body: string } {
  const body = JSON.stringify(event);
  const signature = new Webhook(secret).sign(event.id, at, body);
  return {
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": event.id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signature,
    },
  };
}

export async function sendWebhook(
  target: { url: string; secret: string },
  event: TreasuryEvent,
  opts: TargetPolicy & { timeoutMs: number; userAgent: string; now?: Date },
): Promise<SendOutcome> {
  let url: URL;
  try {
    url = checkWebhookUrl(target.url, opts);
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  const { headers, body } = signedDelivery(event, target.secret, opts.now ?? new Date());
  const client = url.protocol === "https:" ? https : http;
  return new Promise<SendOutcome>((resolve) => {
    const req = client.request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)), "user-agent": opts.userAgent },
        lookup: guardedLookup(opts),
        timeout: opts.timeoutMs,
        agent: false,
      },
      (res) => {
        res.resume(); // the answer's body is not read, only drained
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve({ ok: true, status });
        else if (status >= 300 && status < 400) resolve({ ok: false, error: `HTTP ${status}: redirects are not followed` });
        else resolve({ ok: false, error: `HTTP ${status}` });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on("error", (err) => resolve({ ok: false, error: err.message }));
    req.end(body);
  });
}
