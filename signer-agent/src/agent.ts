/**
 * The signer agent as a library: pay (x402) or authenticate (bearer), get an
 * envelope, check it against the intent and the policy, preflight each step on
 * the fork, sign with the local key, relay, and read the result on chain.
 */
import { declarationOf, type TreasuryAction } from "@treasury/core/actions";
import { balancesOf, quoteExactIn, readReserves } from "@treasury/core/chain/market-reads";
import { quoterV2 } from "@treasury/core/contracts/uniswap-quoter";
import { CONVERT_POOL_FEE } from "@treasury/core/contracts/uniswap";
import type { ActionBody } from "@treasury/core/actions/declaration";
import { randomUUID } from "node:crypto";
import { formatUnits, getAddress, parseUnits, type Hex } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { AuditLog } from "./audit-log";
import type { SwapFloor } from "@treasury/core/actions/signer-rule";
import { checkIntent, checkStep, DEFAULT_MAX_SLIPPAGE_BPS, PolicyRefusal, policyMicro, type Policy } from "./policy";
import { describeCall, EnvelopeError, type Envelope } from "./envelope";
import { readPosition } from "./position";
import { parseUsdc } from "@treasury/core/domain/money";
import { Preflight, PreflightError } from "./preflight";
import { GatewayAccess, type X402Scheme } from "./gateway-access";
import { ExecutedByService, RefusedError } from "./errors";
import { SpendingCaps } from "./caps";

/** the actions the agent asks for: every treasury action the gateway declares (@treasury/core/actions) */
export type AgentAction = TreasuryAction;

/**
 * An amount as given: decimal text (the command line's, parsed exactly with parseUnits) or a JSON number
 * (a library caller's, through its decimal text); at most 6 decimals, as every amount of the API.
 * Returns its micro-units (USDC: micro-USDC; a token amount: millionths of the asset).
 */
export function amountMicro(amount: number | string): bigint {
  if (typeof amount === "number") return parseUsdc(amount);
  if (!/^\d+(\.\d{1,6})?$/.test(amount)) throw new RangeError(`amount "${amount}" is not a decimal number with at most 6 decimals`);
  return parseUnits(amount, 6);
}

/** micro-units as the JSON number a request body carries (the one place a number is made; exact up to 9 digits before the point) */
const jsonAmount = (micro: bigint): number => Number(formatUnits(micro, 6));

/** what an envelope is checked against: the action asked for, its amount (decimal text or number), its flags (target, asset, sell) */
export interface Ask {
  action: AgentAction;
  amount: number | string;
  extra?: Record<string, unknown>;
}

export interface AgentOptions {
  privateKey: Hex;
  gatewayUrl: string;
  /** the fork the agent preflights on (and reads results from) */
  rpcUrl: string;
  policy: Policy;
  audit: AuditLog;
  /** pay with a bearer key instead of x402 */
  bearer?: string;
  /** Base Sepolia RPC for x402 payments (exact signs without it; a session reads its channel there) */
  x402RpcUrl?: string;
  /** how x402 is paid: `exact` (one transfer a call, the default) or `session` (one deposit, then vouchers) */
  x402Scheme?: X402Scheme;
  /** where a session's channel state is kept, so a restarted agent continues its channel (default: x402-sessions beside the audit log) */
  x402SessionDir?: string;
  progress?: (line: string) => void;
  /** how long a relay is retried while the gateway is down or the step in progress (default 120 s) */
  relayRetryMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** answers that mean "wait and send the same thing again", not "refused" */
const IN_PROGRESS = new Set(["idempotency_in_progress", "step_in_flight", "payment_in_progress"]);

export { RefusedError };

export class SignerAgent {
  readonly account: PrivateKeyAccount;
  private readonly preflight: Preflight;
  private readonly log: (line: string) => void;
  /** the daily signing cap and the x402 budget, reserved atomically */
  private readonly caps: SpendingCaps;
  /** how the agent gets through the gateway's door: its bearer key, x402 within the policy's caps, or a sign-in */
  private readonly access: GatewayAccess;

  constructor(private readonly opts: AgentOptions) {
    this.account = privateKeyToAccount(opts.privateKey);
    this.preflight = new Preflight(opts.rpcUrl);
    this.caps = new SpendingCaps(opts.audit);
    this.log = opts.progress ?? (() => undefined);
    this.access = new GatewayAccess({ ...opts, account: this.account, caps: this.caps, chainId: () => this.preflight.client.getChainId(), log: this.log });
  }

  get address(): `0x${string}` {
    return this.account.address;
  }

  /** the x402 requirements of each paid route as its last 402 stated them (gateway-access.ts) */
  private get challenges() {
    return this.access.challenges;
  }

  /** the request body of an action: its declaration's (@treasury/core/actions), with any extra fields given */
  static bodyOf(action: AgentAction, amount: number | string, extra: Record<string, unknown> = {}): ActionBody {
    // the command line's flags (target, asset) through the declaration; a library caller's allocation or purpose as given
    const { allocation, purpose } = extra as ActionBody;
    return {
      ...(allocation ? { allocation } : {}),
      ...(purpose ? { purpose } : {}),
      ...declarationOf(action).cli.body(jsonAmount(amountMicro(amount)), extra as Record<string, string>),
    };
  }

  /** ask the gateway for an action (returns the envelope, or throws with its typed error); `amount` in USDC, or in the asset's units for a token amount (withdraw of ETH) */
  async request(action: AgentAction, amount: number | string, extra: Record<string, unknown> = {}): Promise<Envelope> {
    const { method, path } = await this.access.routeOf(`prepare_${action}`);
    // a downward leg without a key is opened by the wallet's own signature (x402 sign-in-with-x), never paid for
    const f =
      !this.opts.bearer && declarationOf(action).direction === "down"
        ? this.access.signedInFetch(() => this.access.authedFetch(method, path))
        : await this.access.authedFetch(method, path);
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
      // a managed treasury: the service ran it and answered the receipt; there is nothing to sign
      if (res.status === 200) throw new ExecutedByService(action, body);
      const retryAfter = Number(res.headers.get("retry-after") ?? 1) * 1_000;
      const waiting = IN_PROGRESS.has(body.error ?? "") || body.error === "payment_settlement_unknown";
      if (!waiting || Date.now() + retryAfter > deadline)
        throw new RefusedError("gateway", `${res.status} ${body.error ?? ""}: ${body.message ?? JSON.stringify(body)}`, body);
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
      throw new RefusedError("policy", (err as Error).message, undefined, { cause: err });
    }
    const moved = decoded.usdcMoved;
    let release: () => void;
    try {
      release = this.caps.reserveSigning(moved, policyMicro(this.opts.policy.daily_cap_usdc));
    } catch (err) {
      const reason = (err as Error).message;
      this.opts.audit.append({ event: "refused", reason, tx_id: step.tx_id });
      throw new RefusedError("policy", reason, undefined, { cause: err });
    }
    try {
      let prepared;
      try {
        prepared = await this.preflight.prepare(step.unsigned_transaction, this.address);
      } catch (err) {
        const reason = err instanceof PreflightError ? err.message : String(err);
        this.opts.audit.append({ event: "refused", reason: `preflight: ${reason}`, tx_id: step.tx_id });
        throw new RefusedError("preflight", reason, undefined, { cause: err });
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
      // 429: the gateway's rate limit, the relay not processed: waited out as its Retry-After says
      const waiting = status >= 500 || status === 202 || status === 429 || IN_PROGRESS.has(body.error);
      if (!waiting) throw new RefusedError("relay", `${status} ${body.error}: ${body.message}`, body);
      const wait = status === 429 ? Math.max(retryAfter, 1_000) : Math.min(Math.max(backoff, retryAfter), 4_000);
      if (Date.now() + wait > deadline)
        throw new RefusedError(
          "relay",
          `still ${status === 202 ? "broadcasting" : (body.error ?? status)} after ${this.opts.relayRetryMs ?? 120_000} ms: ${body.message ?? ""}`,
          body,
        );
      if (status === 202) key = `relay-${randomUUID()}`;
      this.log(`      relay ${status === 202 ? "sent, not mined yet" : `${status} ${body.error ?? ""}`}; asking again in ${wait} ms`);
      await sleep(wait);
    }
  }

  /** the whole loop: ask the gateway, then check, sign and relay its envelope (execute) */
  async run(action: AgentAction, amount: number | string, extra: Record<string, unknown> = {}) {
    const params = declarationOf(action).params(SignerAgent.bodyOf(action, amount, extra));
    this.log(
      `requesting ${action}${action === "exit" ? "" : ` of ${formatUnits(amountMicro(amount), 6)} ${params.asset ?? "USDC"}`} from ${this.opts.gatewayUrl}`,
    );
    const envelope = await this.request(action, amount, extra);
    return this.execute(envelope, { action, amount, extra });
  }

  /**
   * An envelope the gateway already answered (signer-agent relay: a person asked for it with curl), checked
   * against what it states it is (its action and amount_usdc) and what the caller says was asked (`stated`:
   * amount, target, asset, sell, as `run` takes them), then signed and relayed exactly as `run` does. What the
   * envelope does not state and the caller did not say (a conversion's target, a token withdrawal's or sale's
   * asset and units) is an EnvelopeError `intent_missing` naming the flag, never guessed from the calldata.
   */
  async relayEnvelope(envelope: Envelope, stated: { amount?: string; target?: string; asset?: string; sell?: boolean } = {}) {
    const action = envelope.action as AgentAction;
    const missing = (what: string): never => {
      throw new EnvelopeError("intent_missing", `the ${action} envelope ${envelope.tx_id} does not state ${what}`);
    };
    if (action === "convert" && !stated.target) missing("what it buys: pass --target btc|eth, as asked of the gateway");
    if (action === "sell" && (!stated.asset || !stated.amount))
      missing("the asset and units sold: pass --asset eth|btc --amount <units>, as asked of the gateway");
    const tokenAmount = (stated.asset ?? "usdc").toLowerCase() !== "usdc";
    if (action === "withdraw" && tokenAmount && !stated.amount) missing(`the ${stated.asset} units withdrawn: pass --amount <units>, as asked of the gateway`);
    if (action === "withdraw" && !tokenAmount) {
      const withdrawn = envelope.steps.map((s) => checkStep(this.opts.policy, s.unsigned_transaction, this.address)).find((c) => c.role === "withdraw");
      const usdc = Object.values(AAVE_MARKETS).some((m) => withdrawn && getAddress(m.usdc) === withdrawn.token);
      if (withdrawn && !usdc) missing("what it withdraws (not USDC): pass --asset eth|btc --amount <units>, as asked of the gateway");
    }
    const extra = {
      ...(stated.target ? { target: stated.target } : {}),
      ...(stated.asset ? { asset: stated.asset } : {}),
      ...(stated.sell ? { sell: true } : {}),
    };
    const amount = action === "exit" ? 0 : (stated.amount ?? envelope.amount_usdc);
    // a step relayed already (this file relayed before, or in part) is not signed again: its receipt stands
    return this.execute(envelope, { action, amount, extra }, { skipRelayed: true });
  }

  /** the gateway's state of one step's relay (GET /api/v1/relay/{tx_id}, public), or null when it cannot say */
  private async relayStatus(txId: string): Promise<{ status: string; tx_hash: string | null; receipt: Record<string, any> | null } | null> {
    const res = await fetch(`${this.opts.gatewayUrl}/api/v1/relay/${txId}`).catch(() => null);
    return res?.ok ? ((await res.json()) as { status: string; tx_hash: string | null; receipt: Record<string, any> | null }) : null;
  }

  /**
   * Check an envelope against what was asked and the policy (checkIntent: the decoded calldata only), preflight
   * and sign each step, relay it, and read the result on chain. The one signing path of `run` and `relay`.
   */
  async execute(envelope: Envelope, ask: Ask, o: { skipRelayed?: boolean } = {}) {
    const { action, amount, extra = {} } = ask;
    const d = declarationOf(action);
    const params = d.params(SignerAgent.bodyOf(action, amount, extra));
    this.log(`envelope ${envelope.tx_id}: ${envelope.steps.length} steps`);
    let calls;
    try {
      // each swap of the envelope for USDC is bounded at least at the signer's own quote (the pool, over its own RPC)
      // less its policy's maximum slippage; read from the calldata, decoded here (checkIntent decodes it again)
      const swapFloors = await this.swapFloors(envelope);
      // what was asked, exactly: micro-USDC, or for a token amount its asset and units
      const intent = {
        action,
        amountMicro: d.valueMicro || action === "exit" ? 0n : amountMicro(amount),
        target: params.target,
        asset: params.asset,
        units: params.units === undefined ? undefined : BigInt(params.units),
        swapFloors,
        // an exit must close the debt the wallet has (read here, on the signer's own RPC), and sells only when asked
        ...(action === "exit" ? { position: await this.aavePosition(envelope), sell: params.sell === true } : {}),
      };
      calls = checkIntent(intent, envelope, this.address, this.opts.policy);
    } catch (err) {
      if (err instanceof PolicyRefusal) {
        this.opts.audit.append({ event: "refused", reason: err.message, tx_id: envelope.tx_id });
        throw new RefusedError("policy", err.message, undefined, { cause: err });
      }
      throw err;
    }
    const receipts = [];
    let relayedNow = 0;
    for (const [i, step] of envelope.steps.entries()) {
      this.log(`[${step.seq + 1}/${envelope.steps.length}] ${describeCall(calls[i]!, this.opts.policy.allowed_targets)}`);
      const before = o.skipRelayed ? await this.relayStatus(step.tx_id) : null;
      if (before?.status === "relayed" && before.receipt) {
        this.log(`      relayed already: ${before.tx_hash}`);
        receipts.push(before.receipt);
        continue;
      }
      relayedNow++;
      const signed = await this.signStep(step);
      const receipt = await this.relay(step.tx_id, signed);
      this.log(`      ${receipt.simulated ? "simulated" : "confirmed"} ${receipt.tx_hash}${receipt.block_number ? ` in block ${receipt.block_number}` : ""}`);
      receipts.push(receipt);
    }
    const feeMicro = calls.filter((c) => c.role === "fee").reduce((sum, c) => sum + c.amount, 0n);
    if (relayedNow > 0)
      this.opts.audit.append({
        event: "executed",
        tx_id: envelope.tx_id,
        treasury_id: envelope.treasury_id,
        action,
        amount_micro: parseUsdc(envelope.amount_usdc).toString(),
        ...(params.asset && params.units !== undefined ? { asset: params.asset, units: String(params.units) } : {}),
        fee_micro: feeMicro.toString(),
        tx_hash: receipts.at(-1)?.tx_hash,
      });
    const onChain = await this.position();
    return { envelope, receipts, onChain, feeMicro };
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

  /** the wallet's Aave position and balances on the fork, exact (position.ts) */
  position() {
    return readPosition(this.preflight.client, this.address);
  }
}
