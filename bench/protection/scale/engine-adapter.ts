/**
 * One pass of a protection engine as the bench and the market-fall test drive it: `pass(block)` returns its
 * report, its acts go on apart and `settled()` awaits them.
 */
import type { Hex } from "viem";
import type { AppContext } from "../../../gateway/src/services/context";
import { ProtectionEngine } from "../../../gateway/src/protection/engine";

/** what a pass reports */
export interface PassFigures {
  block?: bigint;
  watched?: number;
  candidates?: number;
  acting?: number;
  ms: number;
}

export type AnyEngine = ProtectionEngine;

export function newEngine(ctx: AppContext, rpcUrl: string, automationKey: Hex, o: { shards?: number } = {}): AnyEngine {
  return new ProtectionEngine(ctx, { rpcUrls: { base: rpcUrl }, automationKey, ...o });
}

/** one pass at `block` */
export async function passOnce(e: AnyEngine, block?: bigint): Promise<PassFigures> {
  const t = performance.now();
  const r = await e.pass(block === undefined ? {} : { block });
  return { block: r.block ?? undefined, watched: r.watched, candidates: r.candidates, acting: r.acting, ms: performance.now() - t };
}

/** the acts the passes started, finished */
export async function settled(e: AnyEngine): Promise<void> {
  await e.settled();
}
