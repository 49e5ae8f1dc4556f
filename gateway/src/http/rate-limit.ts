import type { Request, RequestHandler, Response } from "express";
import { ipKeyGenerator } from "express-rate-limit";
import type { RateLimitStore } from "../store/rate-limit-store";
import { sendError } from "./errors";
import { TreasuryError } from "@treasury/core/lib/errors";

/**
 * Rate limits (spec 8): reads (GET, HEAD, OPTIONS) and writes (everything
 * else) in separate windows, counted per credential when the request carries
 * a valid one, else per client address (express-rate-limit's
 * `ipKeyGenerator`: an IPv6 client is counted by its /56). Every answer
 * carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.
 * The counters live in the shared store, so N instances count one client's
 * requests once, not N times. An instance takes a client's budget from the
 * shared count in blocks (a tenth of the limit, at most 64; one atomic upsert
 * a block) and spends a block locally: together the instances never grant
 * more than the limit; a client spread over N instances may be refused up to
 * (N - 1) blocks early, never late. A limit under 20 has blocks of one: every
 * hit is written.
 *
 * The middleware is this module's own (express-rate-limit's was 9-15% of a
 * public GET's CPU in the bench's profile: an async function, validations,
 * debug calls, per request): a hit spent from a local block is counted
 * synchronously, and a request with no credential header never waits for a
 * credential lookup.
 */

/** a block of a key's budget this instance took from the shared count: hits granted before it, hits used of it, hits left */
interface Block {
  before: number;
  used: number;
  left: number;
  resetAt: number;
}

/** one counted hit: the client's hits in the window so far (this one included) and when the window ends */
export interface Hit {
  totalHits: number;
  resetTime: Date;
}

const MAX_LOCAL_BLOCKS = 10_000;

/** the block size of a limit: a tenth of it, 1 to 64 */
export const blockSizeOf = (limit: number): number => Math.max(1, Math.min(64, Math.floor(limit / 10)));

/** a client's count over the shared store; one per limit (its own key prefix) */
export class SharedCounter {
  private windowMs = 60_000;
  private readonly blocks = new Map<string, Block>();
  private readonly blockSize: number;
  constructor(
    private readonly store: RateLimitStore,
    readonly prefix: string,
    readonly limit: number,
  ) {
    this.blockSize = blockSizeOf(limit);
  }
  init(options: { windowMs: number }): void {
    this.windowMs = options.windowMs;
  }
  /** a hit spent from this instance's block of the key, if it has one left (no store access) */
  local(key: string, now = Date.now()): Hit | undefined {
    const block = this.blocks.get(key);
    if (!block || block.resetAt <= now || block.left <= 0) return undefined;
    block.left--;
    block.used++;
    return { totalHits: block.before + block.used, resetTime: new Date(block.resetAt) };
  }
  async increment(key: string): Promise<Hit> {
    const now = Date.now();
    const spent = this.local(key, now);
    if (spent) return spent;
    const hit = await this.store.hit(this.prefix + key, this.windowMs, now, this.blockSize);
    const before = hit.hits - this.blockSize;
    const granted = Math.max(0, Math.min(this.blockSize, this.limit - before));
    if (granted === 0) {
      this.blocks.delete(key);
      return { totalHits: before + 1, resetTime: new Date(hit.resetAt) }; // over the limit: refused
    }
    if (this.blocks.size >= MAX_LOCAL_BLOCKS) this.forgetEnded(now);
    this.blocks.set(key, { before, used: 1, left: granted - 1, resetAt: hit.resetAt });
    return { totalHits: before + 1, resetTime: new Date(hit.resetAt) };
  }
  /** bounded memory: drop the blocks of ended windows, and the oldest if that is not enough */
  private forgetEnded(now: number): void {
    for (const [k, b] of this.blocks) if (b.resetAt <= now) this.blocks.delete(k);
    for (const k of this.blocks.keys()) {
      if (this.blocks.size < MAX_LOCAL_BLOCKS / 2) break;
      this.blocks.delete(k);
    }
  }
}

/**
 * A request carrying a payment that names no proven payer: one from a payer who has not yet paid this service
 * (nothing of theirs settled: an identity anyone can mint for free with a fresh key), or a proof that is not
 * valid now (malformed, expired, spent, another route's: a settled proof is public). It buys no budget of its
 * own: it is counted against the client address, in the write window whatever its method (it may cost the
 * facilitator a verification, an outside call, as a write does).
 */
export const UNPROVEN_PAYER = Symbol("unproven payer");

/**
 * Resolves a request to an identity that cost something to have (a valid API key's id, a payer whose
 * payment this service has settled, named by a proof valid now) or undefined (counted by client address);
 * UNPROVEN_PAYER for any other payment. A claimed but unproven identity never picks a bucket. A request with no credential
 * header answers synchronously (undefined), so it is counted without waiting.
 */
export type RateIdentity = string | typeof UNPROVEN_PAYER | undefined;
export type CredentialResolver = (req: Request) => Promise<RateIdentity> | RateIdentity;

export interface RateLimitOptions {
  readPerWindow: number;
  writePerWindow: number;
  windowMs: number;
  credentialOf: CredentialResolver;
  counters: RateLimitStore;
  /**
   * POST paths of a protocol whose requests are mostly not writes (MCP: initialize, notifications,
   * tools/list, read-only tools): counted in the read window; the handler takes a write for each call
   * that changes something through `res.locals.chargeWrite()` (the typed 429, or undefined).
   */
  protocolPaths?: string[];
  /**
   * a request this process sent to itself (an MCP tool call served by its REST twin): a paid one is counted
   * again (under a payer who has paid, or as a write of the MCP client's address); a keyed or public one not
   * at all (the MCP request that carried it was counted, and its write taken through chargeWrite)
   */
  internal?: (req: Request) => boolean;
  /** the client's address (default req.ip): an internal request's is the MCP client's it was made for */
  addressOf?: (req: Request) => string;
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const isPromise = <T>(v: T | Promise<T>): v is Promise<T> => typeof (v as { then?: unknown } | undefined)?.then === "function";

/** seconds until a window ends, at least 1 */
const secondsUntil = (resetTime: Date): number => Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000));

type Next = (err?: unknown) => void;

/**
 * Counts a request against `counter` under a key and refuses (typed 429) past the counter's limit; with
 * `headers`, every answer carries the X-RateLimit-* headers. A hit spent from a local block answers
 * synchronously.
 */
function counting(counter: SharedCounter, refuse: (res: Response, hit: Hit) => void, headers: boolean): (key: string, res: Response, next: Next) => void {
  // the limit's text, once; the reset's, once per window end (every hit of a block shares it)
  const limitText = String(counter.limit);
  let resetMs = NaN;
  let resetText = "";
  const answer = (hit: Hit, res: Response, next: Next): void => {
    if (headers && !res.headersSent) {
      const ms = hit.resetTime.getTime();
      if (ms !== resetMs) {
        resetMs = ms;
        resetText = String(Math.ceil(ms / 1000));
      }
      res.setHeader("X-RateLimit-Limit", limitText);
      res.setHeader("X-RateLimit-Remaining", String(Math.max(counter.limit - hit.totalHits, 0)));
      res.setHeader("X-RateLimit-Reset", resetText);
    }
    if (hit.totalHits > counter.limit) return refuse(res, hit);
    next();
  };
  return (key, res, next) => {
    const spent = counter.local(key);
    if (spent) return answer(spent, res, next);
    counter.increment(key).then((hit) => answer(hit, res, next), next);
  };
}

export function rateLimits(opts: RateLimitOptions): RequestHandler {
  const addressOf = opts.addressOf ?? ((req: Request) => req.ip ?? "unknown");
  /** an address's key (`ipKeyGenerator`: an IPv6 client's /56), kept per address seen (a bounded set, started over when full) */
  const addressKeys = new Map<string, string>();
  const addressKey = (address: string): string => {
    let key = addressKeys.get(address);
    if (key === undefined) {
      if (addressKeys.size >= MAX_LOCAL_BLOCKS) addressKeys.clear();
      key = `ip:${ipKeyGenerator(address)}`;
      addressKeys.set(address, key);
    }
    return key;
  };
  /** a proven identity's own bucket, else the client address's */
  const keyOf = (who: RateIdentity, req: Request) => (typeof who === "string" ? `cred:${who}` : addressKey(addressOf(req)));
  const refuse = (res: Response, hit: Hit) => {
    const retryAfter = secondsUntil(hit.resetTime);
    sendError(
      res,
      new TreasuryError(
        "rate_limited",
        `too many requests; retry after ${retryAfter} seconds`,
        { retry_after_seconds: retryAfter },
        { "Retry-After": String(retryAfter) },
      ),
    );
  };
  const readCounter = new SharedCounter(opts.counters, "read:", opts.readPerWindow);
  const writeCounter = new SharedCounter(opts.counters, "write:", opts.writePerWindow);
  for (const c of [readCounter, writeCounter]) c.init({ windowMs: opts.windowMs });
  const read = counting(readCounter, refuse, true);
  const write = counting(writeCounter, refuse, true);
  const protocol = new Set(opts.protocolPaths ?? []);

  /** one request under the identity resolved for it: an unproven payer's in the write window of its address, whatever the method */
  const count = (who: RateIdentity, req: Request, res: Response, next: Next): void => {
    const key = keyOf(who, req);
    if (who === UNPROVEN_PAYER) return write(key, res, next);
    if (READ_METHODS.has(req.method)) return read(key, res, next);
    if (req.method === "POST" && protocol.has(req.path)) {
      res.locals.chargeWrite = async (): Promise<TreasuryError | undefined> => {
        const hit = await writeCounter.increment(key);
        if (hit.totalHits <= opts.writePerWindow) return undefined;
        const retryAfter = secondsUntil(hit.resetTime);
        return new TreasuryError("rate_limited", `too many state-changing calls; retry after ${retryAfter} seconds`, { retry_after_seconds: retryAfter });
      };
      return read(key, res, next);
    }
    return write(key, res, next);
  };
  /** the request's identity; a resolver that throws (a header it could not read) names nobody: counted by the client address, as an unproven payer */
  const identityOf = (req: Request): ReturnType<CredentialResolver> => {
    try {
      const who = opts.credentialOf(req);
      return isPromise(who) ? who.catch(() => UNPROVEN_PAYER) : who;
    } catch {
      return UNPROVEN_PAYER;
    }
  };
  return (req, res, next) => {
    if (opts.internal?.(req)) {
      // the outer request was counted under its client; its internal twin again only when it carries a payment:
      // under a payer who has paid, or (an unproven payer: a facilitator verification) as a write of the client's address
      if (req.header("authorization")) return next();
      void Promise.resolve(identityOf(req)).then((who) => (who === undefined ? next() : count(who, req, res, next)), next);
      return;
    }
    const who = identityOf(req);
    if (isPromise(who)) who.then((w) => count(w, req, res, next), next);
    else count(who, req, res, next);
  };
}

/**
 * Free credentials (sandbox keys, treasury registrations, each a fresh write
 * budget) are limited per client address, so one client cannot mint itself
 * unlimited budgets.
 */
export function credentialCreationLimit(opts: {
  perHour: number;
  paths: string[];
  counters: RateLimitStore;
  addressOf?: (req: Request) => string;
}): RequestHandler {
  const addressOf = opts.addressOf ?? ((req: Request) => req.ip ?? "unknown");
  const counter = new SharedCounter(opts.counters, "credentials:", opts.perHour);
  counter.init({ windowMs: 3_600_000 });
  const limit = counting(
    counter,
    (res) =>
      sendError(
        res,
        new TreasuryError(
          "rate_limited",
          `at most ${opts.perHour} free credentials per client address per hour; retry later`,
          { retry_after_seconds: 3600 },
          { "Retry-After": "3600" },
        ),
      ),
    false,
  );
  const paths = new Set(opts.paths);
  return (req, res, next) => (req.method === "POST" && paths.has(req.path) ? limit(`ip:${ipKeyGenerator(addressOf(req))}`, res, next) : next());
}
