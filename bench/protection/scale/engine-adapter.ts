/**
 * One pass of a protection engine, whichever engine this tree holds: the engine of design-40 (`pass(block)`
 * returns its report; its acts go on apart, `settled()` awaits them) or today's (`tick()`: a walk over every
 * delegation, each act awaited inside it). The bench and the market-fall test call only this file, so they
 * run on both, and today's figures are the baseline.
 */
import type { Hex } from "viem";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import type { AppContext } from "../../../gateway/src/services/context";
import { ProtectionEngine } from "../../../gateway/src/protection/engine";

/** what a pass reports (design-40's PassReport; today's tick fills what it can) */
export interface PassFigures {
  kind: "pass" | "tick";
  block?: bigint;
  watched?: number;
  candidates?: number;
  acting?: number;
  ms: number;
}

interface NewEngine {
  pass(block?: bigint): Promise<{ block: bigint; watched: number; candidates: number; acting: number; ms: number }>;
  settled(): Promise<void>;
}

export type AnyEngine = ProtectionEngine;

export function newEngine(ctx: AppContext, rpcUrl: string, automationKey: Hex, o: { shardCount?: number; engineId?: string } = {}): AnyEngine {
  const rpcUrls: Partial<Record<TreasuryChain, string>> = { base: rpcUrl };
  return new ProtectionEngine(ctx, { rpcUrls, automationKey, ...o } as ConstructorParameters<typeof ProtectionEngine>[1]);
}

/** the engine has design-40's pass */
export const hasPass = (e: AnyEngine): boolean => typeof (e as unknown as Partial<NewEngine>).pass === "function";

/** one pass at `block` (today's engine: one tick, its acts awaited inside it) */
export async function passOnce(e: AnyEngine, block?: bigint): Promise<PassFigures> {
  const t = performance.now();
  if (hasPass(e)) {
    const r = await (e as unknown as NewEngine).pass(block);
    return { kind: "pass", block: r.block, watched: r.watched, candidates: r.candidates, acting: r.acting, ms: performance.now() - t };
  }
  const results = await e.tick();
  return {
    kind: "tick",
    block,
    watched: results.length,
    candidates: results.filter((r) => r.outcome !== "healthy" && r.outcome !== "not_active").length,
    ms: performance.now() - t,
  };
}

/** the acts the passes started, finished (today's engine finishes them inside its tick) */
export async function settled(e: AnyEngine): Promise<void> {
  if (hasPass(e)) await (e as unknown as NewEngine).settled();
}
