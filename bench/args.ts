/**
 * What a bench run measures and for how long, from its command line and environment (bench/run.ts lists
 * the flags): one reading, shared by every part of the run.
 */
import path from "node:path";
import { ROOT } from "./processes";

export const QUICK = process.argv.includes("--quick");
export const PROFILE = process.argv.includes("--profile");
export const ROUTES_ONLY = PROFILE || process.argv.includes("--routes-only");
export const TABLES_ONLY = process.argv.includes("--tables");
export const LOOP_ONLY = process.argv.includes("--wallet-loop");
export const PAID_ONLY = process.argv.includes("--paid");
/** only the protection engine at scale (bench/protection/scale/bench.ts) */
export const PROTECTION_SCALE = process.argv.includes("--protection-scale");
/** only the event path: the action routes with the event log off, on, and with webhooks (bench/events.ts) */
export const EVENTS_ONLY = process.argv.includes("--events");
export const SECONDS = QUICK ? 1 : Number(process.env.BENCH_SECONDS ?? 5);
export const WARMUP = QUICK ? 0.3 : 1;
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** each route and the baseline alternate in this many slices of SECONDS / SLICES (http-load.ts interleaved) */
export const SLICES = QUICK ? 2 : Number(process.env.BENCH_SLICES ?? 5);
export const PAID_CONCURRENCY = QUICK ? [4] : [4, 16, 64];
/**
 * The paid rows of one concurrency (the stock middleware, the gateway's v1, its v2) take turns, each turn in
 * another order, so that each is measured as often early as late on the chain their settlements grow
 * (Anvil's CPU per settlement grows with it: in run F, always in the same order, 13.2 / 15.6 / 17.9 ms at 64).
 */
export const PAID_TURNS = QUICK ? 1 : Number(process.env.BENCH_PAID_TURNS ?? 3);
export const RESULTS = path.join(ROOT, "bench", "results");
