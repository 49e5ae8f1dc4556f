/**
 * The protection module's Deleveraged events over a run, collected block by block with the ETH price of their
 * block, and their books: each sale against the oracle at its block, its gas, the flash loan's premium.
 */
import { parseEventLogs, type Hex, type Log } from "viem";
import { PROTECTION_MODULE_ABI } from "@treasury/core/contracts/protection-module";
import type { ForkClient } from "./fork-client";

export interface ModuleLog {
  block: number;
  eth: number;
  log: Log;
}

/** the module's logs since the run started (none without a module) */
export class ModuleLogs {
  readonly logs: ModuleLog[] = [];
  constructor(
    private readonly client: ForkClient,
    private readonly module: `0x${string}` | undefined,
    private fromBlock: bigint,
  ) {}

  /** the logs of the blocks mined since the last collection, at the scenario's block `block` and ETH price `eth` */
  async collect(block: number, eth: number): Promise<void> {
    if (!this.module) return;
    const to = await this.client.getBlockNumber();
    if (to < this.fromBlock) return;
    for (const log of await this.client.getLogs({ address: this.module, fromBlock: this.fromBlock, toBlock: to })) this.logs.push({ block, eth, log });
    this.fromBlock = to + 1n;
  }
}

export interface DeleverageBooks {
  deleverages: number;
  /** the scenario's block of the first deleverage */
  firstBlock: number | null;
  gasWei: bigint;
  /** oracle value of the collateral sold minus the USDC received, USD */
  slippageUsd: number;
  premiumUsd: number;
}

export async function deleverageBooks(client: ForkClient, logs: ModuleLog[]): Promise<DeleverageBooks> {
  const events = logs.flatMap((s) =>
    parseEventLogs({ abi: PROTECTION_MODULE_ABI, logs: [s.log as never], eventName: "Deleveraged" }).map((e) => ({ ...s, e })),
  );
  let gasWei = 0n;
  for (const hash of new Set(events.map((x) => x.log.transactionHash!))) {
    const r = await client.getTransactionReceipt({ hash: hash as Hex });
    gasWei += r.gasUsed * r.effectiveGasPrice;
  }
  return {
    deleverages: events.length,
    firstBlock: events.length > 0 ? events[0]!.block : null,
    gasWei,
    slippageUsd: events.reduce((sum, x) => sum + (Number(x.e.args.collateralSold) / 1e18) * x.eth - Number(x.e.args.usdcReceived) / 1e6, 0),
    premiumUsd: events.reduce((sum, x) => sum + Number(x.e.args.flashPremium) / 1e6, 0),
  };
}
