/** The access log's direct line: pino's format, the same fields as the structured line, every credential masked. */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { accessFields, accessLog, type AccessLine } from "./access-log";
import { scrubLogObject } from "./log-scrub";

const ADMIN = "admin-token-0123456789abcdef";
const KEY = "sk_test_AbCdEf0123456789xyz";

function loggers(level = "info") {
  const lines: string[] = [];
  const base = pino({ level, base: { service: "treasury-gateway" } }, { write: (s: string) => void lines.push(s) });
  // as app.ts makes it: every structured line passes the scrubber
  const logger = base.child({}, { formatters: { log: (o) => scrubLogObject(o, [ADMIN]) as Record<string, unknown> } });
  return { lines, logger };
}

const line = (over: Partial<AccessLine> = {}): AccessLine => ({
  requestId: "req_0123456789abcdef0123456789abcdef",
  method: "GET",
  url: "/api/v1/public/gateway-status?ltv=55",
  remoteAddress: "127.0.0.1",
  userAgent: 'agent "quoted" \\ \u2028',
  status: 200,
  responseTime: 1.234,
  aborted: false,
  ...over,
});

describe("access log", () => {
  it("writes the line pino writes for the same fields, level, time and bindings", () => {
    for (const l of [line(), line({ aborted: true, status: 499 }), line({ remoteAddress: undefined, userAgent: undefined }), line({ status: 404 })]) {
      const direct = loggers();
      accessLog(direct.logger, [ADMIN])(l);
      const structured = loggers();
      structured.logger.info(accessFields(l), l.aborted ? "request aborted" : "request completed");
      expect(direct.lines).toHaveLength(1);
      expect(direct.lines[0]!.endsWith("\n")).toBe(true);
      const [a, b] = [JSON.parse(direct.lines[0]!), JSON.parse(structured.lines[0]!)];
      expect(Math.abs(a.time - b.time)).toBeLessThan(1000);
      expect({ ...a, time: 0 }).toEqual({ ...b, time: 0 });
      expect(Object.keys(a)).toEqual(Object.keys(b)); // the same order: level, time, bindings, fields, msg
    }
  });

  it("masks an API key and the admin token in every field a caller chooses", () => {
    const { lines, logger } = loggers();
    const log = accessLog(logger, [ADMIN]);
    log(line({ requestId: KEY, url: `/api/v1/treasury?api_key=${KEY}&token=${ADMIN}&x=${ADMIN}`, userAgent: `bot ${KEY} ${ADMIN}` }));
    log(line({ url: `/p/${KEY}`, userAgent: ADMIN }));
    const text = lines.join("");
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(KEY.slice(8));
    expect(text).not.toContain(ADMIN);
    const first = JSON.parse(lines[0]!);
    expect(first.req.url).toBe("/api/v1/treasury?api_key=[redacted]&token=[redacted]&x=[redacted]");
    expect(first.request_id).toBe("sk_test_[redacted]");
  });

  it("a URL or user agent seen again, or one too long to keep, is written and masked as the first time", () => {
    const { lines, logger } = loggers();
    const log = accessLog(logger, [ADMIN]);
    const long = `/p?token=${ADMIN}&q=${"x".repeat(600)}`;
    const seen = [
      line({ url: `/a?api_key=${KEY}` }),
      line({ url: `/a?api_key=${KEY}` }),
      line({ url: long, userAgent: `bot ${KEY}` }),
      line({ url: long, userAgent: `bot ${KEY}` }),
    ];
    for (const l of seen) log(l);
    const written = lines.map((l) => JSON.parse(l));
    expect(written.map((w) => w.req.url)).toEqual([
      "/a?api_key=[redacted]",
      "/a?api_key=[redacted]",
      `/p?token=[redacted]&q=${"x".repeat(600)}`,
      `/p?token=[redacted]&q=${"x".repeat(600)}`,
    ]);
    expect(written.map((w) => w.req.user_agent)).toEqual([
      'agent "quoted" \\ \u2028',
      'agent "quoted" \\ \u2028',
      "bot sk_test_[redacted]",
      "bot sk_test_[redacted]",
    ]);
    expect(lines.join("")).not.toContain(ADMIN);
  });

  it("a 5xx goes through the structured logger at error level; nothing is written below the logger's level", () => {
    const { lines, logger } = loggers();
    accessLog(logger, [ADMIN])(line({ status: 503 }));
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, msg: "request errored", res: { statusCode: 503 } });
    const quiet = loggers("warn");
    const log = accessLog(quiet.logger, []);
    log(line());
    expect(quiet.lines).toHaveLength(0);
    log(line({ status: 500 }));
    expect(quiet.lines).toHaveLength(1);
  });
});
