/**
 * How the signer agent gets through the gateway's door for a request: its
 * bearer key; or x402, paid within the policy's price cap and daily budget
 * (a route whose requirements a 402 already stated is paid up front), one
 * transfer per call (`exact`) or a voucher of a session (x402-session.ts); or,
 * for a downward leg, the wallet's own sign-in (x402 sign-in-with-x), never paid.
 */
import { dirname, join, resolve } from "node:path";
import { createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { createWalletClient } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { wrapFetchWithPayment, decodeXPaymentResponse } from "x402-fetch";
import { createPaymentHeader, selectPaymentRequirements } from "x402/client";
import { ChainIdToNetwork, PaymentRequirementsSchema, type PaymentRequirements } from "x402/types";
import { rpcHttp } from "@treasury/core/chain/rpc-transport";
import { formatDecimal, parseDecimal } from "@treasury/core/domain/money";
import type { AuditLog } from "./audit-log";
import type { SpendingCaps } from "./caps";
import { RefusedError } from "./errors";
import { policyMicro, type Policy } from "./policy";
import { SessionPayer } from "./x402-session";

/** how x402 is paid: one EIP-3009 transfer per call (`exact`), or vouchers of a session (`batch-settlement`) */
export type X402Scheme = "exact" | "session";
export const X402_SCHEMES: readonly X402Scheme[] = ["exact", "session"];

/** one entry of the gateway's /x402/prices.json */
interface GatewayPrice {
  method: string;
  path: string;
  amount_usdc: string;
  amount_atomic?: string;
  tool?: string;
}

export class GatewayAccess {
  constructor(
    private readonly opts: {
      gatewayUrl: string;
      bearer?: string;
      x402RpcUrl?: string;
      x402Scheme?: X402Scheme;
      /** where a session's channel state is kept (default: x402-sessions beside the audit log) */
      x402SessionDir?: string;
      policy: Policy;
      audit: AuditLog;
      account: PrivateKeyAccount;
      caps: SpendingCaps;
      chainId: () => Promise<number>;
      log: (line: string) => void;
    },
  ) {}

  private sessions?: SessionPayer;
  /** the session payer (one per agent: its channel state is shared by every route) */
  private session(): SessionPayer {
    const { audit, caps, policy } = this.opts;
    this.sessions ??= new SessionPayer({
      account: this.opts.account,
      rpcUrl: this.opts.x402RpcUrl,
      directory: this.opts.x402SessionDir ?? join(dirname(resolve(audit.file)), "x402-sessions"),
      audit,
      log: this.opts.log,
      budgetLeft: () => caps.x402Left(policyMicro(policy.x402_daily_budget_usdc)),
    });
    return this.sessions;
  }

  private prices?: Promise<GatewayPrice[]>;
  /** the gateway's price list (read once): each priced capability's route, amount and MCP tool */
  private priceList(): Promise<GatewayPrice[]> {
    this.prices ??= fetch(`${this.opts.gatewayUrl}/x402/prices.json`)
      .then(async (r) => ((await r.json()) as { prices: GatewayPrice[] }).prices)
      .catch((err: unknown) => {
        this.prices = undefined;
        throw err;
      });
    return this.prices;
  }

  /** the route of a capability, found by its MCP tool name in the gateway's declaration (never restated here) */
  async routeOf(tool: string): Promise<{ method: string; path: string }> {
    const price = (await this.priceList()).find((p) => p.tool === tool);
    if (!price) throw new RefusedError("gateway", `the gateway declares no priced capability ${tool}`);
    return price;
  }

  /**
   * A fetch that signs in with the wallet (x402 sign-in-with-x): the request goes out without a credential, its
   * 402 offers `extensions["sign-in-with-x"]` bound to that very request, the wallet signs it (EIP-4361) and the
   * same request goes again with the SIGN-IN-WITH-X header. Nothing is paid.
   */
  signedInFetch(paid: () => Promise<typeof fetch>): typeof fetch {
    return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const first = await fetch(input, init);
      if (first.status !== 402 && first.status !== 401) return first;
      const ext = (
        (await first
          .clone()
          .json()
          .catch(() => ({}))) as { extensions?: Record<string, { info: Record<string, unknown> }> }
      ).extensions?.["sign-in-with-x"];
      if (!ext) return first;
      const chainId = await this.opts.chainId();
      const payload = await createSIWxPayload(
        { ...(ext.info as unknown as Parameters<typeof createSIWxPayload>[0]), chainId: `eip155:${chainId}`, type: "eip191" },
        this.opts.account,
        String(input),
      );
      this.opts.log("signing in with the wallet (sign-in-with-x): a downward leg is free");
      const signedIn = await fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "SIGN-IN-WITH-X": encodeSIWxHeader(payload) } });
      if (signedIn.status !== 401) return signedIn;
      // no treasury stands behind this wallet yet (a signature creates none): pay, within the policy's x402 caps
      this.opts.log(
        `      sign-in refused (${
          (
            (await signedIn
              .clone()
              .json()
              .catch(() => ({}))) as { message?: string }
          ).message ?? "401"
        }); paying with x402 instead`,
      );
      return (await paid())(input, init);
    }) as typeof fetch;
  }

  /** a fetch that authenticates: the bearer key, or x402 within the policy's price cap and daily budget */
  async authedFetch(method: string, path: string): Promise<typeof fetch> {
    if (this.opts.bearer) {
      const bearer = this.opts.bearer;
      return (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${bearer}` } });
    }
    const price = (await this.priceList()).find((p) => p.method === method && p.path === path);
    if (!price) throw new RefusedError("x402", `the gateway has no x402 price for ${method} ${path}`);
    const amount = BigInt((price as { amount_atomic?: string }).amount_atomic ?? parseDecimal(price.amount_usdc, 6));
    const shown = formatDecimal(amount, 6);
    const refusal = this.opts.caps.x402Refusal(amount, policyMicro(this.opts.policy.x402_max_price_usdc), policyMicro(this.opts.policy.x402_daily_budget_usdc));
    if (refusal) {
      this.opts.audit.append({ event: "x402_refused", reason: refusal, amount_micro: amount.toString() });
      throw new RefusedError("x402", refusal);
    }
    if (this.opts.x402Scheme === "session") return this.session().fetchFor(`${method} ${path}`, amount);
    const wallet = createWalletClient({ account: this.opts.account, chain: baseSepolia, transport: rpcHttp(this.opts.x402RpcUrl) });
    const route = `${method} ${path}`;
    // x402-fetch's client (ask, get the 402, pay), each 402's requirements remembered for the route
    const remembering = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const res = await fetch(input, init);
      if (res.status === 402) {
        const body = (await res
          .clone()
          .json()
          .catch(() => undefined)) as { x402Version?: number; accepts?: unknown[] } | undefined;
        const accepts = body?.accepts
          ?.map((a) => PaymentRequirementsSchema.safeParse(a))
          .filter((r) => r.success)
          .map((r) => r.data);
        if (body?.x402Version && accepts?.length) this.challenges.set(route, { x402Version: body.x402Version, accepts });
      }
      return res;
    }) as typeof fetch;
    const stock = wrapFetchWithPayment(remembering, wallet as never, amount);
    /**
     * A route whose requirements a 402 already stated is paid up front: the proof x402-fetch would make for
     * them (the same selection, the same cap), sent with the first request, so one round trip fewer. A 402
     * answer (the requirements changed, or the proof was refused: nothing was charged) forgets them and the
     * request is made again the stock way.
     */
    const pay = async (input: string, init?: RequestInit): Promise<Response> => {
      const known = this.challenges.get(route);
      const selected = known && selectPaymentRequirements(known.accepts, ChainIdToNetwork[baseSepolia.id], "exact");
      if (known && selected && BigInt(selected.maxAmountRequired) <= amount) {
        const header = await createPaymentHeader(wallet as never, known.x402Version, selected);
        const res = await fetch(input, {
          ...init,
          headers: { ...(init?.headers as Record<string, string>), "X-PAYMENT": header, "Access-Control-Expose-Headers": "X-PAYMENT-RESPONSE" },
        });
        if (res.status !== 402) return res;
        this.challenges.delete(route);
      }
      return stock(input, init);
    };
    return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const res = await pay(input as string, init);
      const header = res.headers.get("x-payment-response");
      if (header) {
        const settled = decodeXPaymentResponse(header);
        this.opts.audit.append({
          event: "x402_payment",
          amount_micro: amount.toString(),
          amount_usdc: Number(shown),
          tx_hash: settled.transaction,
          route: `${method} ${path}`,
        });
        this.opts.log(`paid ${shown} USDC with x402 (settlement ${settled.transaction.slice(0, 12)}...)`);
      }
      return res;
    }) as typeof fetch;
  }

  /** the x402 requirements of each paid route ("METHOD path") as its last 402 stated them */
  readonly challenges = new Map<string, { x402Version: number; accepts: PaymentRequirements[] }>();
}
