/**
 * The signer agent as a library: pay (x402) or authenticate (bearer), get an
 * envelope, check it against the intent and the policy, preflight each step on
 * the fork, sign with the local key, relay, and read the result on chain.
 */
import { createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { declarationOf, type TreasuryAction } from "../../gateway/src/actions";
import { balancesOf, quoteExactIn, readReserves } from "../../gateway/src/chain/market-reads";
import { quoterV2 } from "../../contracts-abi/uniswap-quoter";
import { CONVERT_POOL_FEE } from "../../contracts-abi/uniswap";
import type { ActionBody } from "../../gateway/src/actions/declaration";
import { randomUUID } from "node:crypto";
import { createWalletClient, getAddress, type Hex } from "viem";
import { rpcHttp } from "../../gateway/src/chain/rpc-transport";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { wrapFetchWithPayment, decodeXPaymentResponse } from "x402-fetch";
import { createPaymentHeader, selectPaymentRequirements } from "x402/client";
import { ChainIdToNetwork, PaymentRequirementsSchema, type PaymentRequirements } from "x402/types";
import { AAVE_POOL_ABI } from "../../contracts-abi/aave-pool";
import { AAVE_MARKETS } from "../../contracts-abi/chains";
import { ERC20_ABI } from "../../contracts-abi/erc20";
import { AuditLog } from "./audit-log";
import type { SwapFloor } from "../../gateway/src/actions/signer-rule";
import { checkIntent, checkStep, DEFAULT_MAX_SLIPPAGE_BPS, PolicyRefusal, policyMicro, type Policy, type StepTx } from "./policy";
import { formatDecimal, parseDecimal, parseUsdc } from "../../gateway/src/domain/money";
import { Preflight, PreflightError } from "./preflight";
import { SpendingCaps } from "./caps";

/** the actions the agent asks for: every treasury action the gateway declares (gateway/src/actions) */
export type AgentAction = TreasuryAction;

export interface AgentOptions {
  privateKey: Hex;
  gatewayUrl: string;
  /** the fork the agent preflights on (and reads results from) */
  rpcUrl: string;
  policy: Policy;
  audit: AuditLog;
  /** pay with a bearer key instead of x402 */
  bearer?: string;
  /** Base Sepolia RPC for x402 payments (signing needs none; kept for balance reads) */
  x402RpcUrl?: string;
  progress?: (line: string) => void;
  /** how long a relay is retried while the gateway is down or the step in progress (default 120 s) */
  relayRetryMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** answers that mean "wait and send the same thing again", not "refused" */
const IN_PROGRESS = new Set(["idempotency_in_progress", "step_in_flight", "payment_in_progress"]);

export class RefusedError extends Error {
  constructor(
    readonly stage: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** one entry of the gateway's /x402/prices.json */
interface GatewayPrice {
  method: string;
  path: string;
  amount_usdc: string;
  amount_atomic?: string;
  tool?: string;
}

interface Envelope {
  tx_id: string;
  action: string;
  amount_usdc: number;
  steps: { tx_id: string; seq: number; kind: string; unsigned_transaction: StepTx; summary: { description: string } }[];
  [k: string]: unknown;
}

export class SignerAgent {
  readonly account: PrivateKeyAccount;
  private readonly preflight: Preflight;
  private readonly log: (line: string) => void;
  /** the daily signing cap and the x402 budget, reserved atomically */
  private readonly caps: SpendingCaps;

  constructor(private readonly opts: AgentOptions) {
    this.account = privateKeyToAccount(opts.privateKey);
    this.preflight = new Preflight(opts.rpcUrl);
    this.caps = new SpendingCaps(opts.audit);
    this.log = opts.progress ?? (() => undefined);
  }

  get address(): `0x${string}` {
    return this.account.address;
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
  private async routeOf(tool: string): Promise<{ method: string; path: string }> {
    const price = (await this.priceList()).find((p) => p.tool === tool);
    if (!price) throw new RefusedError("gateway", `the gateway declares no priced capability ${tool}`);
    return price;
  }

  /**
   * A fetch that signs in with the wallet (x402 sign-in-with-x): the request goes out without a credential, its
   * 402 offers `extensions["sign-in-with-x"]` bound to that very request, the wallet signs it (EIP-4361) and the
   * same request goes again with the SIGN-IN-WITH-X header. Nothing is paid.
   */
  private signedInFetch(paid: () => Promise<typeof fetch>): typeof fetch {
    return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const first = await fetch(input, init);
      if (first.status !== 402 && first.status !== 401) return first;
      const ext = ((await first.clone().json().catch(() => ({}))) as { extensions?: Record<string, { info: Record<string, unknown> }> }).extensions?.["sign-in-with-x"];
      if (!ext) return first;
      const chainId = await this.preflight.client.getChainId();
      const payload = await createSIWxPayload({ ...(ext.info as unknown as Parameters<typeof createSIWxPayload>[0]), chainId: `eip155:${chainId}`, type: "eip191" }, this.account, String(input));
      this.log("signing in with the wallet (sign-in-with-x): a downward leg is free");
      const signedIn = await fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "SIGN-IN-WITH-X": encodeSIWxHeader(payload) } });
      if (signedIn.status !== 401) return signedIn;
      // no treasury stands behind this wallet yet (a signature creates none): pay, within the policy's x402 caps
      this.log(`      sign-in refused (${((await signedIn.clone().json().catch(() => ({}))) as { message?: string }).message ?? "401"}); paying with x402 instead`);
      return (await paid())(input, init);
    }) as typeof fetch;
  }

  /** a fetch that authenticates: the bearer key, or x402 within the policy's price cap and daily budget */
  private async authedFetch(method: string, path: string): Promise<typeof fetch> {
    if (this.opts.bearer) {
      const bearer = this.opts.bearer;
      return (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${bearer}` } });
    }
    const price = (await this.priceList()).find((p) => p.method === method && p.path === path);
    if (!price) throw new RefusedError("x402", `the gateway has no x402 price for ${method} ${path}`);
    const amount = BigInt((price as { amount_atomic?: string }).amount_atomic ?? parseDecimal(price.amount_usdc, 6));
    const shown = formatDecimal(amount, 6);
    const refusal = this.caps.x402Refusal(amount, policyMicro(this.opts.policy.x402_max_price_usdc), policyMicro(this.opts.policy.x402_daily_budget_usdc));
    if (refusal) {
      this.opts.audit.append({ event: "x402_refused", reason: refusal, amount_micro: amount.toString() });
      throw new RefusedError("x402", refusal);
    }
    const wallet = createWalletClient({ account: this.account, chain: baseSepolia, transport: rpcHttp(this.opts.x402RpcUrl) });
    const route = `${method} ${path}`;
    // x402-fetch's client (ask, get the 402, pay), each 402's requirements remembered for the route
    const remembering = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const res = await fetch(input, init);
      if (res.status === 402) {
        const body = (await res.clone().json().catch(() => undefined)) as { x402Version?: number; accepts?: unknown[] } | undefined;
        const accepts = body?.accepts?.map((a) => PaymentRequirementsSchema.safeParse(a)).filter((r) => r.success).map((r) => r.data);
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
        const res = await fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "X-PAYMENT": header, "Access-Control-Expose-Headers": "X-PAYMENT-RESPONSE" } });
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
        this.opts.audit.append({ event: "x402_payment", amount_micro: amount.toString(), amount_usdc: Number(shown), tx_hash: settled.transaction, route: `${method} ${path}` });
        this.log(`paid ${shown} USDC with x402 (settlement ${settled.transaction.slice(0, 12)}...)`);
      }
      return res;
    }) as typeof fetch;
  }

  /** the x402 requirements of each paid route ("METHOD path") as its last 402 stated them */
  private readonly challenges = new Map<string, { x402Version: number; accepts: PaymentRequirements[] }>();

  /** the request body of an action: its declaration's (gateway/src/actions), with any extra fields given */
  static bodyOf(action: AgentAction, amount: number, extra: Record<string, unknown> = {}): ActionBody {
    // the command line's flags (target, asset) through the declaration; a library caller's allocation or purpose as given
    const { allocation, purpose } = extra as ActionBody;
    return { ...(allocation ? { allocation } : {}), ...(purpose ? { purpose } : {}), ...declarationOf(action).cli.body(amount, extra as Record<string, string>) };
  }

  /** ask the gateway for an action (returns the envelope, or throws with its typed error); `amount` in USDC, or in the asset's units for a token amount (withdraw of ETH) */
  async request(action: AgentAction, amount: number, extra: Record<string, unknown> = {}): Promise<Envelope> {
    const { method, path } = await this.routeOf(`prepare_${action}`);
    // a downward leg without a key is opened by the wallet's own signature (x402 sign-in-with-x), never paid for
    const f = !this.opts.bearer && declarationOf(action).direction === "down" ? this.signedInFetch(() => this.authedFetch(method, path)) : await this.authedFetch(method, path);
    // one Idempotency-Key for the request and its retries: a retry is answered once and charged at most once
    // (a payment whose settlement's outcome was unknown is the key's credit, settled before anything else)
    const key = `agent-${randomUUID()}`;
    const deadline = Date.now() + (this.opts.relayRetryMs ?? 120_000);
    for (;;) {
      const res = await f(`${this.opts.gatewayUrl}${path}`, {
        method,
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(SignerAgent.bodyOf(action, amount, extra)),
      });
      const body = (await res.json()) as Envelope & { error?: string; message?: string };
      if (res.status === 202) return body;
      const retryAfter = Number(res.headers.get("retry-after") ?? 1) * 1_000;
      const waiting = IN_PROGRESS.has(body.error ?? "") || body.error === "payment_settlement_unknown";
      if (!waiting || Date.now() + retryAfter > deadline) throw new RefusedError("gateway", `${res.status} ${body.error ?? ""}: ${body.message ?? JSON.stringify(body)}`, body);
      this.log(`      ${res.status} ${body.error}; asking again with the same Idempotency-Key in ${retryAfter} ms`);
      await sleep(retryAfter);
    }
  }

  /**
   * Check a step against the policy, reserve its USDC against the daily cap,
   * preflight it on the fork, and sign it. The cap counts what the decoded
   * calldata moves (supply, borrow, repay, swap, fee transfer), whatever the
   * step is labelled; the check and the reservation happen together before
   * any await, so concurrent signatures cannot both pass the same headroom.
   */
  async signStep(step: Envelope["steps"][number]): Promise<Hex> {
    let decoded;
    try {
      decoded = checkStep(this.opts.policy, step.unsigned_transaction, this.address);
    } catch (err) {
      this.opts.audit.append({ event: "refused", reason: (err as Error).message, tx_id: step.tx_id, to: step.unsigned_transaction.to });
      throw new RefusedError("policy", (err as Error).message);
    }
    const moved = decoded.usdcMoved;
    let release: () => void;
    try {
      release = this.caps.reserveSigning(moved, policyMicro(this.opts.policy.daily_cap_usdc));
    } catch (err) {
      const reason = (err as Error).message;
      this.opts.audit.append({ event: "refused", reason, tx_id: step.tx_id });
      throw new RefusedError("policy", reason);
    }
    try {
      let prepared;
      try {
        prepared = await this.preflight.prepare(step.unsigned_transaction, this.address);
      } catch (err) {
        const reason = err instanceof PreflightError ? err.message : String(err);
        this.opts.audit.append({ event: "refused", reason: `preflight: ${reason}`, tx_id: step.tx_id });
        throw new RefusedError("preflight", reason);
      }
      const signed = await this.account.signTransaction({ type: "eip1559", ...prepared });
      this.opts.audit.append({
        event: "signed",
        tx_id: step.tx_id,
        chain_id: prepared.chainId,
        to: prepared.to,
        function: decoded.functionName,
        amount_micro: moved.toString(),
        nonce: prepared.nonce,
      });
      return signed;
    } finally {
      release();
    }
  }

  /**
   * Relay one signed step until the gateway answers for good. The same signed
   * transaction under the same Idempotency-Key is sent again, with backoff
   * (250 ms doubling to 4 s, for at most `relayRetryMs`), while the gateway
   * cannot be reached or answers 5xx (restarting), and while the key or the
   * step is in progress (409 `idempotency_in_progress` / `step_in_flight`):
   * in progress means wait, not refusal. A relay that did land answers its
   * receipt. A 202 `broadcasting` (sent, not mined in the gateway's wait) is
   * the key's final answer, so the same bytes are then relayed under a new key
   * until the receipt comes: the step is claimed by those bytes, nothing can
   * run twice.
   */
  async relay(txId: string, signed: Hex): Promise<Record<string, any>> {
    let key = `relay-${randomUUID()}`;
    const deadline = Date.now() + (this.opts.relayRetryMs ?? 120_000);
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(250 * 2 ** attempt, 4_000);
      let status: number;
      let body: Record<string, any>;
      let retryAfter = 0;
      try {
        const res = await fetch(`${this.opts.gatewayUrl}/api/v1/relay`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({ tx_id: txId, signed_transaction: signed }),
        });
        status = res.status;
        body = (await res.json().catch(() => ({}))) as Record<string, any>;
        retryAfter = Number(res.headers.get("retry-after") ?? 0) * 1000;
      } catch (err) {
        if (Date.now() + backoff > deadline) throw err;
        this.log(`      relay did not connect (${(err as Error).message}); retrying the same transaction and Idempotency-Key in ${backoff} ms`);
        await sleep(backoff);
        continue;
      }
      if (status === 200) {
        this.opts.audit.append({ event: "relayed", tx_id: txId, tx_hash: body.tx_hash });
        return body;
      }
      const waiting = status >= 500 || status === 202 || IN_PROGRESS.has(body.error);
      if (!waiting) throw new RefusedError("relay", `${status} ${body.error}: ${body.message}`, body);
      const wait = Math.min(Math.max(backoff, retryAfter), 4_000);
      if (Date.now() + wait > deadline) throw new RefusedError("relay", `still ${status === 202 ? "broadcasting" : body.error ?? status} after ${this.opts.relayRetryMs ?? 120_000} ms: ${body.message ?? ""}`, body);
      if (status === 202) key = `relay-${randomUUID()}`;
      this.log(`      relay ${status === 202 ? "sent, not mined yet" : `${status} ${body.error ?? ""}`}; asking again in ${wait} ms`);
      await sleep(wait);
    }
  }

  /** the whole loop */
  async run(action: AgentAction, amount: number, extra: Record<string, unknown> = {}) {
    const d = declarationOf(action);
    const params = d.params(SignerAgent.bodyOf(action, amount, extra));
    this.log(`requesting ${action} of ${amount} ${params.asset ?? "USDC"} from ${this.opts.gatewayUrl}`);
    const envelope = await this.request(action, amount, extra);
    this.log(`envelope ${envelope.tx_id}: ${envelope.steps.length} steps`);
    try {
      // each swap of the envelope for USDC is bounded at least at the signer's own quote (the pool, over its own RPC)
      // less its policy's maximum slippage; read from the calldata, decoded here (checkIntent decodes it again)
      const swapFloors = await this.swapFloors(envelope);
      // what was asked, exactly: micro-USDC, or for a token amount its asset and units
      const intent = {
        action,
        amountMicro: d.valueMicro ? 0n : parseUsdc(amount),
        target: params.target,
        asset: params.asset,
        units: params.units === undefined ? undefined : BigInt(params.units),
        swapFloors,
        // an exit must close the debt the wallet has (read here, on the signer's own RPC), and sells only when asked
        ...(action === "exit" ? { position: await this.aavePosition(envelope), sell: params.sell === true } : {}),
      };
      checkIntent(intent, envelope, this.address, this.opts.policy);
    } catch (err) {
      if (err instanceof PolicyRefusal) {
        this.opts.audit.append({ event: "refused", reason: err.message, tx_id: envelope.tx_id });
        throw new RefusedError("policy", err.message);
      }
      throw err;
    }
    const receipts = [];
    for (const step of envelope.steps) {
      this.log(`[${step.seq + 1}/${envelope.steps.length}] ${step.summary.description}`);
      const signed = await this.signStep(step);
      const receipt = await this.relay(step.tx_id, signed);
      this.log(`      ${receipt.simulated ? "simulated" : "confirmed"} ${receipt.tx_hash}${receipt.block_number ? ` in block ${receipt.block_number}` : ""}`);
      receipts.push(receipt);
    }
    const onChain = await this.position();
    return { envelope, receipts, onChain };
  }

  /** the least each swap in the envelope may return (either way: USDC for ETH or BTC, or back): the pool's quote asked here, less the policy's maximum slippage */
  private async swapFloors(envelope: Envelope): Promise<SwapFloor[]> {
    const chainId = envelope.steps[0]?.unsigned_transaction.chain_id;
    const market = Object.values(AAVE_MARKETS).find((m) => m.chainId === chainId);
    if (!market || chainId === undefined) return [];
    const swaps = envelope.steps
      .map((s) => checkStep(this.opts.policy, s.unsigned_transaction, this.address))
      .filter((c) => c.role === "swap" && c.counterparty !== undefined);
    const keep = BigInt(10_000 - (this.opts.policy.max_slippage_bps ?? DEFAULT_MAX_SLIPPAGE_BPS));
    // swaps through one pool run one after the other: each is quoted after the ones before it (what its units add to their quote)
    const sold = new Map<string, { units: bigint; out: bigint }>();
    const floors: SwapFloor[] = [];
    for (const c of swaps) {
      const pair = `${c.token}>${c.counterparty}`;
      const before = sold.get(pair) ?? { units: 0n, out: 0n };
      const out = await quoteExactIn(this.preflight.client, quoterV2(chainId), c.token, c.counterparty!, CONVERT_POOL_FEE, before.units + c.amount);
      sold.set(pair, { units: before.units + c.amount, out });
      floors.push({ token: c.token, tokenOut: c.counterparty!, amountIn: c.amount, floor: ((out - before.out) * keep) / 10_000n });
    }
    return floors;
  }

  /** the wallet's USDC debt and each of the market's supplies (aToken balances), exact units, read on the signer's own RPC */
  private async aavePosition(envelope: Envelope): Promise<{ debt: bigint; supplied: Record<`0x${string}`, bigint> }> {
    const chainId = envelope.steps[0]?.unsigned_transaction.chain_id;
    const market = Object.values(AAVE_MARKETS).find((m) => m.chainId === chainId);
    if (!market) throw new RefusedError("policy", `no Aave market on chain ${chainId}`);
    const assets = [market.usdc, market.weth, market.btc].map((a) => getAddress(a));
    const reserves = await readReserves(this.preflight.client, market.pool, assets);
    const [debt, ...supplied] = await balancesOf(this.preflight.client, [reserves[0]!.variableDebtToken, ...reserves.map((r) => r.aToken)], this.address);
    return { debt: debt!, supplied: Object.fromEntries(assets.map((a, i) => [a, supplied[i]!])) };
  }

  private readonly aUsdc = new Map<number, Promise<`0x${string}`>>();

  /** the wallet's Aave position and balances on the fork */
  async position() {
    // the preflight's client: the fork's RPC, its reads batched
    const client = this.preflight.client;
    const chainId = await client.getChainId();
    const market = Object.values(AAVE_MARKETS).find((m) => m.chainId === chainId);
    if (!market) return null;
    // the USDC reserve's aToken does not change: read once per chain
    let aToken = this.aUsdc.get(chainId);
    if (!aToken) {
      aToken = client.readContract({ address: market.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [market.usdc] }).then((r) => r.aTokenAddress);
      this.aUsdc.set(chainId, aToken);
      aToken.catch(() => this.aUsdc.delete(chainId));
    }
    const [[collateral, debt, , , , healthFactor], aUsdc, usdc] = await Promise.all([
      client.readContract({ address: market.pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [this.address] }),
      aToken.then((address) => client.readContract({ address, abi: ERC20_ABI, functionName: "balanceOf", args: [this.address] })),
      client.readContract({ address: market.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: [this.address] }),
    ]);
    return {
      chain_id: chainId,
      collateral_usd: Number(collateral) / 1e8,
      debt_usd: Number(debt) / 1e8,
      health_factor: debt === 0n ? null : Number(healthFactor) / 1e18,
      a_usdc: Number(aUsdc) / 1e6,
      usdc: Number(usdc) / 1e6,
    };
  }
}
