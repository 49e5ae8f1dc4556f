/**
 * The access log: one JSON line per request, in the logger's format (pino's level, time and bindings), to
 * the logger's destination. A request's line is written directly: its fields are few, flat and known, and
 * the ones a caller chooses (the URL, the user agent, the request id) pass the credential scrubber
 * (`http/log-scrub.ts`) one by one. Going through pino's `info` with the scrubbing formatter (a deep copy of
 * every logged object) cost about as much as the rest of a public GET's own work (bench/README.md, item
 * 19); every other line the gateway writes still goes through that formatter.
 */
import { pino, type Logger } from "pino";
import { scrubText, scrubUrl } from "./log-scrub";

export interface AccessLine {
  requestId: string;
  method: string;
  url: string;
  remoteAddress: string | undefined;
  userAgent: string | undefined;
  status: number;
  /** milliseconds */
  responseTime: number;
  aborted: boolean;
}

export type AccessLog = (line: AccessLine) => void;

/** the fields of a line, as the structured logger takes them (the 5xx lines, and a destination that needs pino's metadata) */
export const accessFields = (l: AccessLine) => ({
  request_id: l.requestId,
  req: { method: l.method, url: l.url, remote_address: l.remoteAddress, user_agent: l.userAgent },
  res: { statusCode: l.status },
  responseTime: l.responseTime,
  ...(l.aborted ? { aborted: true } : {}),
});

/** how many distinct URLs (and user agents) keep their scrubbed text */
const MEMO_ENTRIES = 1_024;
/** longer ones are scrubbed each time (the memory kept stays under a megabyte) */
const MEMO_LENGTH = 512;

const message = (l: AccessLine) => (l.status >= 500 ? "request errored" : l.aborted ? "request aborted" : "request completed");

/**
 * The access log of `logger` (already carrying the scrubbing formatter for its structured lines); `secrets`
 * are the literals the scrubber masks (the admin token).
 */
export function accessLog(logger: Logger, secrets: readonly string[]): AccessLog {
  const structured: AccessLog = (l) => {
    if (l.status >= 500) logger.error(accessFields(l), message(l));
    else logger.info(accessFields(l), message(l));
  };
  const s = pino.symbols;
  const internals = logger as unknown as Record<symbol, any>;
  const stream = internals[s.streamSym] as { write(line: string): unknown; [k: symbol]: unknown } | undefined;
  const info = logger.levels.values.info!;
  const levelPrefix = (internals[s.lsCacheSym] as Record<number, string> | undefined)?.[info];
  const time = internals[s.timeSym] as (() => string) | undefined;
  const bindings = internals[s.chindingsSym] as string | undefined;
  // a destination that wants pino's per-line metadata (multistream), or a logger shaped otherwise: the structured way
  if (!stream || stream[s.needsMetadataGsym] || typeof levelPrefix !== "string" || typeof time !== "function" || typeof bindings !== "string")
    return structured;
  const str = JSON.stringify;
  // the URLs and user agents a gateway sees repeat: each one's scrubbed JSON text is kept (a bounded set, started
  // over when full) instead of scrubbed and encoded again for every request; the scrubber is a function of the
  // text and `secrets` alone, so the text kept is the text it would write
  const urls = new Map<string, string>();
  const agents = new Map<string, string>();
  const kept = (memo: Map<string, string>, v: string, scrub: (v: string) => string): string => {
    if (v.length > MEMO_LENGTH) return str(scrub(v));
    let text = memo.get(v);
    if (text === undefined) {
      if (memo.size >= MEMO_ENTRIES) memo.clear();
      text = str(scrub(v));
      memo.set(v, text);
    }
    return text;
  };
  const scrubUrlText = (v: string) => scrubUrl(v, secrets);
  const scrubAgentText = (v: string) => scrubText(v, secrets);
  return (l) => {
    if (l.status >= 500 || !logger.isLevelEnabled("info")) return structured(l);
    stream.write(
      `${levelPrefix}${time()}${bindings},"request_id":${str(scrubText(l.requestId, secrets))},"req":{"method":${str(l.method)},"url":${kept(urls, l.url, scrubUrlText)}` +
        `${l.remoteAddress === undefined ? "" : `,"remote_address":${str(l.remoteAddress)}`}${l.userAgent === undefined ? "" : `,"user_agent":${kept(agents, l.userAgent, scrubAgentText)}`}},` +
        `"res":{"statusCode":${l.status}},"responseTime":${l.responseTime}${l.aborted ? ',"aborted":true' : ""},"msg":${str(message(l))}}\n`,
    );
  };
}
