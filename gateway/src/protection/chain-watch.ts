/**
 * What one engine knows of one chain between blocks, and one block's watch: the trigger index of the Safes it
 * watches (packages/core/src/domain/trigger-index.ts) and the last block it saw. A block's watch is a fixed
 * number of requests whatever the number of Safes (protection/watch-reads.ts):
 *
 * - the market at the block (oracle prices, reserve indexes and liquidation thresholds: one multicall);
 * - the watched Safes whose position changed since the last block (one eth_getLogs over the aTokens, debt
 *   tokens and the Pool);
 * - the positions of the Safes new to the index, changed, or due for their rolling re-read (each Safe every
 *   REREAD_BLOCKS blocks, spread evenly over them), in multicall chunks;
 * - the index's candidates (at or past their crossing) and the Safes the engine must look at anyway (an open
 *   claim, a disarmed trigger, a staged upgrade) confirmed with Aave's own account data and the module's
 *   enablement at the same block, in multicall chunks.
 *
 * Every read of one watch is taken at one block number. Nothing here writes to the store or sends anything.
 */
import type { PublicClient } from "viem";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { WATCH_REREAD_BLOCKS } from "@treasury/core/domain/protection-terms";
import { TriggerIndex, type MarketAt } from "@treasury/core/domain/trigger-index";
import type { DelegationRecord } from "../store/delegation-store";
import { changedAccounts, confirm, readMarket, readPositions, type ConfirmedAccount } from "./watch-reads";

/** each watched Safe's position is read in full at least this often (60 s at Base's 2 s blocks) */
const REREAD_BLOCKS = BigInt(WATCH_REREAD_BLOCKS);

/** a watched Safe and the trigger it is watched for (the health score under which the engine acts) */
export interface Watched {
  d: DelegationRecord;
  threshold: number;
}

export interface BlockWatch {
  block: bigint;
  market: MarketAt;
  /** positions read in full this block (new, changed or due) */
  reread: number;
  /** the index's candidates this block */
  candidates: number;
  /** Safes looked at on chain this block, with Aave's account data and the module's enablement */
  confirmed: { w: Watched; on: { account: ConfirmedAccount; moduleEnabled: boolean } }[];
}

const WAD = 10n ** 18n;
/** a health score (2 decimals) as a wad */
export const thresholdWad = (threshold: number): bigint => (BigInt(Math.round(threshold * 100)) * WAD) / 100n;

/** a stable spread of Safes over the re-read cycle (the treasury id's characters summed) */
function phase(id: string): bigint {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return BigInt(h);
}

export class ChainWatch {
  readonly index = new TriggerIndex();
  /** the trigger each indexed Safe was indexed at (an operator's new statement changes it) */
  private readonly triggers = new Map<string, bigint>();
  private last: bigint | undefined;

  constructor(
    readonly chain: TreasuryChain,
    private readonly client: PublicClient,
  ) {}

  /**
   * One block's watch of `watched` (this engine's Safes on this chain). `mustLook` names Safes confirmed on
   * chain whatever the index says (an open claim, a disarmed trigger, a staged upgrade).
   */
  async observe(block: bigint, watched: Watched[], mustLook: (w: Watched) => boolean): Promise<BlockWatch> {
    const byId = new Map(watched.map((w) => [w.d.treasuryId, w]));
    for (const id of [...this.triggers.keys()])
      if (!byId.has(id)) {
        this.index.remove(id);
        this.triggers.delete(id);
      }
    const since = this.last !== undefined && this.last < block ? this.last + 1n : undefined;
    const [market, changed] = await Promise.all([
      readMarket(this.client, this.chain, block),
      since !== undefined ? changedAccounts(this.client, this.chain, since, block) : Promise.resolve(new Set<string>()),
    ]);
    const due = (w: Watched) => (phase(w.d.treasuryId) + block) % REREAD_BLOCKS === 0n;
    const toRead = watched.filter((w) => this.triggers.get(w.d.treasuryId) !== thresholdWad(w.threshold) || changed.has(w.d.safe.toLowerCase()) || due(w));
    const positions = await readPositions(
      this.client,
      this.chain,
      block,
      toRead.map((w) => ({ id: w.d.treasuryId, safe: w.d.safe, triggerWad: thresholdWad(w.threshold) })),
    );
    for (const p of positions) {
      this.index.upsert(p, market);
      this.triggers.set(p.id, p.triggerWad);
    }

    const candidates = new Set(this.index.candidates(market));
    // the re-read Safes are looked at too: their account data is the console's chart (a sample a re-read cycle)
    const reread = new Set(toRead.map((w) => w.d.treasuryId));
    const look = watched.filter((w) => candidates.has(w.d.treasuryId) || reread.has(w.d.treasuryId) || mustLook(w));
    const onChain = await confirm(
      this.client,
      this.chain,
      block,
      look.map((w) => ({ safe: w.d.safe, module: w.d.module })),
    );
    this.last = block;
    return { block, market, reread: toRead.length, candidates: candidates.size, confirmed: look.map((w, i) => ({ w, on: onChain[i]! })) };
  }
}
