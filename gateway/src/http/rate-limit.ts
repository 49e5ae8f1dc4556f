/**
 * Rate limits (spec 8): reads (GET, HEAD, OPTIONS) and writes (everything
 * else) in separate windows, counted per credential when the request carries
 * a valid one, else per client address. Built on express-rate-limit; its
 * legacy headers are the spec's X-RateLimit-Remaining and X-RateLimit-Reset.
 * The counters live in the shared store, so N instances count one client's
 * requests once, not N times. An instance takes a client's budget from the
 * shared count in blocks (a tenth of the limit, at most 64; one atomic upsert
 * a block) and spends a block locally: together the instances never grant
 * more than the limit; a client spread over N instances may be refused up to
 * (N - 1) blocks early, never late. A limit under 20 has blocks of one: every
 * hit is written.
 */

/** a block of a key's budget this instance took from the shared count: hits granted before it, hits used of it, hits left */
interface Block {
  before: number;
  used: number;
  left: number;
  resetAt: number;
}

const MAX_LOCAL_BLOCKS = 10_000;

/** the block size of a limit: a tenth of it, 1 to 64 */
export const blockSizeOf = (limit: number): number => Math.max(1, Math.min(64, Math.floor(limit / 10)));

/** express-rate-limit's store interface over the shared store; one per limiter (its own key prefix) */
export class SharedCounter implements Store {
  private windowMs = 60_000;
  readonly localKeys = false;
  private readonly blocks = new Map<string, Block>();
  private readonly blockSize: number;
  constructor(
    private readonly store: RateLimitStore,
    readonly prefix: string,
    private readonly limit: number,
  ) {
    this.blockSize = blockSizeOf(limit);
  }
  init(options: Options): void {
    this.windowMs = options.windowMs;
  }
  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const hit = await this.store.get(this.prefix + key, Date.now());
    return hit && { totalHits: hit.hits, resetTime: new Date(hit.resetAt) };
  }
  async increment(key: string): Promise<ClientRateLimitInfo> {
    const now = Date.now();
    const block = this.blocks.get(key);
    if (block && block.resetAt > now && block.left > 0) {
      block.left--;
      block.used++;
      return { totalHits: block.before + block.used, resetTime: new Date(block.resetAt) };
    }
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
  async decrement(key: string): Promise<void> {
    const block = this.blocks.get(key);
    if (block && block.used > 0) {
      block.used--;
      block.left++;
      return;
    }
    await this.store.decrement(this.prefix + key);
  }
  async resetKey(key: string): Promise<void> {
    this.blocks.delete(key);
    await this.store.reset(this.prefix + key);
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
import type { Request, RequestHandler } from "express";
import { ipKeyGenerator, rateLimit, type ClientRateLimitInfo, type Options, type Store } from "express-rate-limit";
import type { RateLimitStore } from "../store/rate-limit-store";
import { ApiError, sendError } from "./errors";

/**
 * Resolves a request to a *verified* identity (a valid API key's id, the
 * payer of an X-PAYMENT whose signature checks out) or undefined: a claimed
 * but unverified identity never picks a bucket.
 */
export type CredentialResolver = (req: Request) => Promise<string | undefined> | string | undefined;

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
   * under its verified payer only; a keyed or public one not at all (the MCP request that carried it was
   * counted, and its write taken through chargeWrite)
   */
  internal?: (req: Request) => boolean;
  /** the client's address (default req.ip): an internal request's is the MCP client's it was made for */
  addressOf?: (req: Request) => string;
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function rateLimits(opts: RateLimitOptions): RequestHandler {
  const addressOf = opts.addressOf ?? ((req: Request) => req.ip ?? "unknown");
  const keyGenerator = async (req: Request) => {
    const credential = await opts.credentialOf(req);
    return credential ? `cred:${credential}` : `ip:${ipKeyGenerator(addressOf(req))}`;
  };
  const common = {
    windowMs: opts.windowMs,
    standardHeaders: false as const,
    legacyHeaders: true,
    keyGenerator,
    handler: (req: Request, res: Parameters<RequestHandler>[1], _next: unknown, options: { windowMs: number }) => {
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : Math.ceil(options.windowMs / 1000);
      sendError(
        res,
        new ApiError("rate_limited", `too many requests; retry after ${retryAfter} seconds`, { retry_after_seconds: retryAfter }, { "Retry-After": String(retryAfter) }),
      );
    },
  };
  const read = rateLimit({ ...common, limit: opts.readPerWindow, identifier: "read", store: new SharedCounter(opts.counters, "read:", opts.readPerWindow) });
  const writeCounter = new SharedCounter(opts.counters, "write:", opts.writePerWindow);
  const write = rateLimit({ ...common, limit: opts.writePerWindow, identifier: "write", store: writeCounter });
  writeCounter.init({ windowMs: opts.windowMs } as Options);
  const protocol = new Set(opts.protocolPaths ?? []);
  return (req, res, next) => {
    if (opts.internal?.(req)) {
      // the outer request was counted under its client; its internal twin only under a verified payer
      if (req.header("authorization")) return next();
      void Promise.resolve(opts.credentialOf(req)).then((who) => (!who ? next() : READ_METHODS.has(req.method) ? read(req, res, next) : write(req, res, next)), next);
      return;
    }
    if (READ_METHODS.has(req.method)) return read(req, res, next);
    if (req.method === "POST" && protocol.has(req.path)) {
      res.locals.chargeWrite = async (): Promise<ApiError | undefined> => {
        const hit = await writeCounter.increment(await keyGenerator(req));
        if (hit.totalHits <= opts.writePerWindow) return undefined;
        const retryAfter = Math.max(1, Math.ceil(((hit.resetTime?.getTime() ?? Date.now() + opts.windowMs) - Date.now()) / 1000));
        return new ApiError("rate_limited", `too many state-changing calls; retry after ${retryAfter} seconds`, { retry_after_seconds: retryAfter });
      };
      return read(req, res, next);
    }
    return write(req, res, next);
  };
}

/**
 * Free credentials (sandbox keys, treasury registrations, each a fresh write
 * budget) are limited per client address, so one client cannot mint itself
 * unlimited budgets.
 */
export function credentialCreationLimit(opts: { perHour: number; paths: string[]; counters: RateLimitStore; addressOf?: (req: Request) => string }): RequestHandler {
  const addressOf = opts.addressOf ?? ((req: Request) => req.ip ?? "unknown");
  const limiter = rateLimit({
    store: new SharedCounter(opts.counters, "credentials:", opts.perHour),
    windowMs: 3_600_000,
    limit: opts.perHour,
    standardHeaders: false,
    legacyHeaders: false,
    identifier: "credentials",
    keyGenerator: (req: Request) => `ip:${ipKeyGenerator(addressOf(req))}`,
    handler: (_req: Request, res: Parameters<RequestHandler>[1]) => {
      sendError(
        res,
        new ApiError("rate_limited", `at most ${opts.perHour} free credentials per client address per hour; retry later`, { retry_after_seconds: 3600 }, { "Retry-After": "3600" }),
      );
    },
  });
  const paths = new Set(opts.paths);
  return (req, res, next) => (req.method === "POST" && paths.has(req.path) ? limiter(req, res, next) : next());
}
