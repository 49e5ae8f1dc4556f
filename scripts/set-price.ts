/**
 * npm run fork:price -- <USDC|WETH|cbBTC> <usd>: move a mock price feed of the running
 * local fork (the fixture's MockAggregator keeps its answer in storage slot 0).
 */
import { createTestClient, http, pad, type Hex } from "viem";
import { base } from "viem/chains";
import { forkManifest } from "../fixtures/base-fork";
import { readStackFile } from "../signer-agent/src/stack-file";

const [asset, usd] = process.argv.slice(2);
const feeds = forkManifest().price_feeds as Record<string, `0x${string}`>;
if (!asset || !feeds[asset] || !usd || Number.isNaN(Number(usd))) {
  process.stderr.write("usage: npm run fork:price -- <USDC|WETH|cbBTC> <usd>\n");
  process.exit(2);
}
// the running stack's fork (its file, whatever its ports), else FORK_RPC_URL / FORK_PORT
const rpc =
  process.env.FORK_RPC_URL ?? (process.env.FORK_PORT ? undefined : readStackFile()?.fork_rpc_url) ?? `http://127.0.0.1:${process.env.FORK_PORT ?? 8545}`;
const test = createTestClient({ mode: "anvil", chain: base, transport: http(rpc) });
const value = BigInt(Math.round(Number(usd) * 1e8));
await test.setStorageAt({ address: feeds[asset]!, index: 0, value: pad(`0x${value.toString(16)}` as Hex) });
await test.mine({ blocks: 1 });
process.stdout.write(`${asset} feed ${feeds[asset]} now answers ${usd} USD\n`);
