/**
 * Configuration, read once from the environment. Every variable is listed in
 * the README; nothing else reads process.env.
 */
import path from "node:path";
import { TREASURY_CHAINS, type ChainKey, type TreasuryChain } from "@treasury/core/contracts/chains";
import type { DatabaseLocation } from "./store/db";
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from "./events/webhook-delivery";
import { getAddress } from "viem";
import { z } from "zod";

const positiveInt = (fallback: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n <= 0) {
        ctx.addIssue({ code: "custom", message: `must be a positive integer, got ${v}` });
        return z.NEVER;
      }
      return n;
    });

const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v && v.trim() !== "" ? v.trim() : undefined))
  .pipe(z.string().url().optional());

/** an address, or nothing when unset or empty */
const optionalAddress = z
  .string()
  .optional()
  .transform((v) => (v && v !== "" ? v : undefined))
  .pipe(
    z
      .string()
      .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
      .optional(),
  );

const envSchema = z.object({
  PORT: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? 4020 : Number(v)))
    .pipe(z.number().int().min(0).max(65535)),
  HOST: z.string().optional().default("127.0.0.1"),
  DATA_DIR: z.string().optional().default("./.data"),
  DATABASE_URL: z
    .string()
    .optional()
    .transform((v) => (v && v.trim() !== "" ? v.trim() : undefined))
    .pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, "DATABASE_URL must be a postgres:// URL")
        .optional(),
    ),
  PUBLIC_BASE_URL: optionalUrl,
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional().default("info"),
  LOG_BUFFER_BYTES: z.coerce.number().int().min(0).max(1_048_576).optional().default(4096),
  RETENTION_SWEEP_MS: z.coerce.number().int().min(0).optional().default(60_000),
  ADMIN_TOKEN: z
    .string()
    .optional()
    .transform((v) => (v && v.length > 0 ? v : undefined))
    .pipe(z.string().min(24, "ADMIN_TOKEN must be at least 24 characters").optional()),
  RATE_LIMIT_READ_PER_MIN: positiveInt(100),
  RATE_LIMIT_WRITE_PER_MIN: positiveInt(20),
  RATE_LIMIT_WINDOW_MS: positiveInt(60_000),
  TRUST_PROXY: z.string().optional().default("false"),
  MCP_ALLOWED_HOSTS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== ""),
    ),
  MCP_ALLOWED_ORIGINS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((o) => o.trim().toLowerCase().replace(/\/+$/, ""))
        .filter((o) => o !== ""),
    )
    .pipe(z.array(z.string().regex(/^https?:\/\/[^/\s]+$/, "MCP_ALLOWED_ORIGINS: each origin is scheme://host[:port]"))),
  CREDENTIALS_PER_HOUR: positiveInt(10),
  SECRETS_KEY: z
    .string()
    .optional()
    .transform((v) => (v && v !== "" ? v : undefined)),
  LIVE_CHAINS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((c) => c.trim())
        .filter((c) => c !== ""),
    )
    .pipe(z.array(z.enum(TREASURY_CHAINS))),
  RELAY_RECEIPT_TIMEOUT_MS: positiveInt(30_000),
  SANDBOX_CHAIN_TOOLS: z.enum(["auto", "off"]).default("auto"),
  SANDBOX_KEY_TTL_DAYS: positiveInt(30),
  SANDBOX_KEY_CAPACITY: positiveInt(100_000),
  BODY_LIMIT_BYTES: positiveInt(64 * 1024),
  ETHEREUM_RPC_URL: optionalUrl,
  ARBITRUM_RPC_URL: optionalUrl,
  BASE_RPC_URL: optionalUrl,
  MARKET_RATES_TTL_SECONDS: positiveInt(60),
  RPC_TIMEOUT_MS: positiveInt(2_500),
  X402_ENABLED: z.enum(["true", "false"]).optional().default("true"),
  X402_FACILITATOR: z.enum(["local", "public", "cdp"]).optional().default("local"),
  X402_FACILITATOR_URL: optionalUrl,
  X402_PAY_TO: optionalAddress,
  X402_MAX_TIMEOUT_SECONDS: positiveInt(120),
  X402_FACILITATOR_TIMEOUT_MS: positiveInt(30_000),
  CDP_API_KEY_ID: z.string().optional(),
  CDP_API_KEY_SECRET: z.string().optional(),
  X402_RECEIPT_SIGNING_KEY: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim())),
  X402_SESSION_RECEIVER_AUTHORIZER: optionalAddress,
  X402_UPTO_FACILITATOR: optionalAddress,
  X402_FACILITATOR_API_KEY: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim())),
  X402_SESSION_WITHDRAW_DELAY_SECONDS: positiveInt(900),
  X402_SESSION_REDEEM_VOUCHERS: positiveInt(100),
  X402_SESSION_REDEEM_AMOUNT: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "1000000" : v))
    .pipe(z.string().regex(/^[1-9]\d{0,30}$/, "must be a positive integer amount in token units")),
  X402_SESSION_REDEEM_SECONDS: positiveInt(60),
  X402_SESSION_SYNC_SECONDS: positiveInt(30),
  AUTOMATION_ADDRESS: optionalAddress,
  WEBHOOK_ALLOW_LOOPBACK: z.enum(["auto", "true", "false"]).optional().default("auto"),
  WEBHOOK_TIMEOUT_MS: positiveInt(10_000),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? DEFAULT_RETRY_SCHEDULE_SECONDS.join(",") : v))
    .pipe(z.string().regex(/^\d+(,\d+)*$/, "must be comma-separated waits in seconds"))
    .transform((v) => v.split(",").map(Number)),
  EVENTS_POLL_MS: positiveInt(1_000),
  EVENT_LOG: z.enum(["on", "off"]).optional().default("on"),
  FEE_RECIPIENT: z
    .string()
    .optional()
    .transform((v) => (v && v !== "" ? v : "0x000000000000000000000000000000000000FeE5"))
    .pipe(z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address"))
    .transform((v) => getAddress(v.toLowerCase())),
});

export type Env = z.input<typeof envSchema>;

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** the store: PostgreSQL at DATABASE_URL (shared by many instances), else the SQLite file DATA_DIR/gateway.sqlite */
  database: DatabaseLocation;
  /** base URL used in links (discovery files, status_url); defaults to http://host:port */
  publicBaseUrl: string | undefined;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** log lines are written in batches of this many bytes (flushed every second and on shutdown); 0: each line at once */
  logBufferBytes: number;
  /** how often expired idempotency records, rate-limit windows and old settled payments are swept (0: never) */
  retentionSweepMs: number;
  /** bearer token of the admin (reviewer) API; the admin API is off when unset */
  adminToken: string | undefined;
  rateLimit: { readPerWindow: number; writePerWindow: number; windowMs: number };
  /** Express "trust proxy": off unless configured (false), else a hop count, "loopback", or addresses */
  trustProxy: boolean | number | string;
  /** 32-byte key sealing secrets at rest (hex or base64); default: DATA_DIR/secrets.key, generated once, mode 0600 */
  secretsKey: string | undefined;
  /** free credentials (sandbox keys, registrations) one client address may create per hour */
  credentialsPerHour: number;
  /** DNS-rebinding guard of /api/mcp: Host values and Origins accepted beyond the public URL's and loopback's */
  mcp: { allowedHosts: string[]; allowedOrigins: string[] };
  /**
   * Chains whose RPC is a production network with real funds. Only executions
   * of live treasuries on these chains are live and count toward platform
   * volume; everything else (the local fork, sandbox keys) is sandbox.
   */
  liveChains: TreasuryChain[];
  /** how long the relay waits for a receipt before answering 202 broadcasting (reconciled later) */
  relayReceiptTimeoutMs: number;
  /**
   * `auto`: on a chain whose RPC is a local Anvil (loopback, client version
   * anvil) and not live, the sandbox funds wallets and provides the steps a
   * one-signature client does not sign (chain/sandbox-chain.ts); `off`: never.
   */
  sandboxChainTools: "auto" | "off";
  sandboxKeyTtlDays: number;
  sandboxKeyCapacity: number;
  bodyLimitBytes: number;
  rpcUrls: Partial<Record<ChainKey, string>>;
  marketRatesTtlSeconds: number;
  rpcTimeoutMs: number;
  /**
   * Events (events/): webhook targets may be http to loopback (`auto`: when the gateway itself is bound to a
   * loopback address, the local stack); a delivery's timeout; the waits between attempts (seconds); how often
   * the delivery worker and the event streams look for events other instances wrote; `log` false (EVENT_LOG=off)
   * writes no event at all, which only `npm run bench` does, to measure what the log costs the action routes.
   */
  events: { allowLoopbackWebhooks: boolean; webhookTimeoutMs: number; webhookRetrySeconds: number[]; pollMs: number; log: boolean };
  /** address that receives service fees in wallet-mode envelopes */
  feeRecipient: `0x${string}`;
  /** the protection engine's automation address (its key is the engine's, never the gateway's) */
  automationAddress: `0x${string}` | undefined;
  x402: {
    enabled: boolean;
    facilitator: "local" | "public" | "cdp";
    facilitatorUrl: string | undefined;
    /** address that receives x402 payments (defaults to the fee recipient) */
    payTo: `0x${string}`;
    maxTimeoutSeconds: number;
    /** how long a facilitator call may take; a settlement not answered in time has an unknown outcome (reconciled by its retry) */
    facilitatorTimeoutMs: number;
    cdpKeyId: string | undefined;
    cdpKeySecret: string | undefined;
    /** the local facilitator's API key (its FACILITATOR_API_KEY), sent as a bearer token on every call to it */
    facilitatorApiKey: string | undefined;
    /**
     * The Ed25519 seed (`ed25519:<base64url>`) that signs x402 offers and receipts (x402/receipts/receipt-key.ts);
     * default DATA_DIR/x402-receipt-signing.key, generated once, mode 0600. It controls no funds (no Ethereum
     * account). Instances sharing a database must share it: each publishes and signs with its own.
     */
    receiptSigningKey: string | undefined;
    /** x402 sessions (`batch-settlement`): offered beside `exact` when the facilitator's receiver authorizer is set */
    sessions: SessionConfig | undefined;
    /** x402 `upto` on metered routes: offered when the facilitator's upto settlement account is set (the payer's Permit2 witness names it) */
    uptoFacilitator: `0x${string}` | undefined;
  };
}

/** x402 sessions: the channel terms a 402 offers and when charged vouchers are redeemed on chain */
export interface SessionConfig {
  /** the facilitator's key that signs claims and refunds for this receiver (ChannelConfig.receiverAuthorizer) */
  receiverAuthorizer: `0x${string}`;
  /** how long a payer's withdrawal waits on chain: every charged voucher is redeemed well within it */
  withdrawDelaySeconds: number;
  /** redeem when this many vouchers are unredeemed, or this amount (token units), or the oldest is this old */
  redeem: { vouchers: number; amount: bigint; maxAgeSeconds: number };
  /** a channel's on-chain state (balance, claims, a pending withdrawal) is read again when older than this */
  syncSeconds: number;
}

export class ConfigError extends Error {}

function sessionConfig(e: z.infer<typeof envSchema>): SessionConfig | undefined {
  if (!e.X402_SESSION_RECEIVER_AUTHORIZER) return undefined;
  const withdrawDelaySeconds = e.X402_SESSION_WITHDRAW_DELAY_SECONDS;
  // a payer may withdraw what is unclaimed after the delay: every voucher charged here is claimed long before
  if (withdrawDelaySeconds < 900 || withdrawDelaySeconds > 2_592_000)
    throw new ConfigError("invalid configuration:\n  X402_SESSION_WITHDRAW_DELAY_SECONDS: must be within 900..2592000 (the scheme's bounds)");
  if (e.X402_SESSION_REDEEM_SECONDS * 3 > withdrawDelaySeconds || e.X402_SESSION_SYNC_SECONDS * 3 > withdrawDelaySeconds)
    throw new ConfigError(
      "invalid configuration:\n  X402_SESSION_REDEEM_SECONDS and X402_SESSION_SYNC_SECONDS: must each be at most a third of X402_SESSION_WITHDRAW_DELAY_SECONDS",
    );
  return {
    receiverAuthorizer: getAddress(e.X402_SESSION_RECEIVER_AUTHORIZER.toLowerCase()),
    withdrawDelaySeconds,
    redeem: { vouchers: e.X402_SESSION_REDEEM_VOUCHERS, amount: BigInt(e.X402_SESSION_REDEEM_AMOUNT), maxAgeSeconds: e.X402_SESSION_REDEEM_SECONDS },
    syncSeconds: e.X402_SESSION_SYNC_SECONDS,
  };
}

const isLoopbackHost = (host: string): boolean => host === "localhost" || host === "::1" || /^127\./.test(host);

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.DATA_DIR),
    database: e.DATABASE_URL ? { url: e.DATABASE_URL } : { file: path.join(path.resolve(e.DATA_DIR), "gateway.sqlite") },
    publicBaseUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, ""),
    logLevel: e.LOG_LEVEL,
    logBufferBytes: e.LOG_BUFFER_BYTES,
    retentionSweepMs: e.RETENTION_SWEEP_MS,
    adminToken: e.ADMIN_TOKEN,
    rateLimit: { readPerWindow: e.RATE_LIMIT_READ_PER_MIN, writePerWindow: e.RATE_LIMIT_WRITE_PER_MIN, windowMs: e.RATE_LIMIT_WINDOW_MS },
    trustProxy: e.TRUST_PROXY === "false" ? false : e.TRUST_PROXY === "true" ? true : /^\d+$/.test(e.TRUST_PROXY) ? Number(e.TRUST_PROXY) : e.TRUST_PROXY,
    credentialsPerHour: e.CREDENTIALS_PER_HOUR,
    mcp: { allowedHosts: e.MCP_ALLOWED_HOSTS, allowedOrigins: e.MCP_ALLOWED_ORIGINS },
    secretsKey: e.SECRETS_KEY,
    liveChains: e.LIVE_CHAINS,
    relayReceiptTimeoutMs: e.RELAY_RECEIPT_TIMEOUT_MS,
    sandboxChainTools: e.SANDBOX_CHAIN_TOOLS,
    sandboxKeyTtlDays: e.SANDBOX_KEY_TTL_DAYS,
    sandboxKeyCapacity: e.SANDBOX_KEY_CAPACITY,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    rpcUrls: { ethereum: e.ETHEREUM_RPC_URL, arbitrum: e.ARBITRUM_RPC_URL, base: e.BASE_RPC_URL },
    marketRatesTtlSeconds: e.MARKET_RATES_TTL_SECONDS,
    rpcTimeoutMs: e.RPC_TIMEOUT_MS,
    events: {
      allowLoopbackWebhooks: e.WEBHOOK_ALLOW_LOOPBACK === "auto" ? isLoopbackHost(e.HOST) : e.WEBHOOK_ALLOW_LOOPBACK === "true",
      webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
      webhookRetrySeconds: e.WEBHOOK_RETRY_SCHEDULE,
      pollMs: e.EVENTS_POLL_MS,
      log: e.EVENT_LOG === "on",
    },
    feeRecipient: e.FEE_RECIPIENT as `0x${string}`,
    automationAddress: e.AUTOMATION_ADDRESS ? getAddress(e.AUTOMATION_ADDRESS.toLowerCase()) : undefined,
    x402: {
      enabled: e.X402_ENABLED === "true",
      facilitator: e.X402_FACILITATOR,
      facilitatorUrl: e.X402_FACILITATOR_URL,
      payTo: (e.X402_PAY_TO ? getAddress(e.X402_PAY_TO.toLowerCase()) : e.FEE_RECIPIENT) as `0x${string}`,
      maxTimeoutSeconds: e.X402_MAX_TIMEOUT_SECONDS,
      facilitatorTimeoutMs: e.X402_FACILITATOR_TIMEOUT_MS,
      cdpKeyId: e.CDP_API_KEY_ID,
      cdpKeySecret: e.CDP_API_KEY_SECRET,
      facilitatorApiKey: e.X402_FACILITATOR_API_KEY,
      receiptSigningKey: e.X402_RECEIPT_SIGNING_KEY,
      sessions: sessionConfig(e),
      uptoFacilitator: e.X402_UPTO_FACILITATOR ? getAddress(e.X402_UPTO_FACILITATOR.toLowerCase()) : undefined,
    },
  };
}
