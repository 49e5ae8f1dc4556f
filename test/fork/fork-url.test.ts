/**
 * BASE_FORK_URL: the suites fork a live chain instead of booting the fixture. No Base RPC is reachable here, so
 * the live chain is played by a node serving the fixture: `startBaseFork({ forkUrl })` forks it with
 * `anvil --fork-url`, reads the manifest from the chain (not from the fixture's file), and moves prices and deals
 * USDC the way it must on Base's real contracts (the oracle's source replaced by the mock aggregator; the token's
 * balance slot written).
 */
import { createWalletClient, http, parseAbi, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AAVE_ORACLE_PRICES_ABI } from "@treasury/core/contracts/aave-oracle";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { forkManifest, startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";

let upstream: BaseForkNode;
let fork: BaseForkNode;

beforeAll(async () => {
  // the fixture itself, whatever BASE_FORK_URL says
  upstream = await startBaseFork({ forkUrl: "" });
  fork = await startBaseFork({ forkUrl: upstream.rpcUrl });
}, 60_000);
afterAll(async () => {
  await fork?.stop();
  await upstream?.stop();
});

it("reads the manifest from the forked chain: every Aave, token, feed and pool address the fixture lists", () => {
  // addresses compared whatever their checksum casing
  const lower = (v: unknown) => JSON.parse(JSON.stringify(v).toLowerCase()) as unknown;
  const fixture = forkManifest();
  const { version, ...aave } = fork.manifest.aave;
  expect(version).toBe("3.6");
  expect(lower(aave)).toEqual(lower({ ...fixture.aave, version: undefined }));
  for (const part of ["tokens", "reserves", "price_feeds", "uniswap_v3"] as const) expect(lower(fork.manifest[part])).toEqual(lower(fixture[part]));
});

it("moves a price through the oracle's source, deals USDC by its balance slot, and Aave lends on it", async () => {
  const m = fork.manifest;
  await fork.setPrice("WETH", 2_345.5);
  const price = await createWalletClient({ chain: base, transport: http(fork.rpcUrl) })
    .extend(publicActions)
    .readContract({ address: m.aave.oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetPrice", args: [m.tokens.WETH] });
  expect(price).toBe(234_550_000_000n);

  const account = privateKeyToAccount(generatePrivateKey());
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl), pollingInterval: 20 }).extend(publicActions);
  await fork.fund(account.address, 1_234_567n);
  await fork.fund(account.address, 1_000_000n);
  expect(await wallet.readContract({ address: m.tokens.USDC, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] })).toBe(2_234_567n);

  const send = async (address: `0x${string}`, abi: never, functionName: string, args: unknown[], value?: bigint) => {
    const receipt = await wallet.waitForTransactionReceipt({ hash: await wallet.writeContract({ address, abi, functionName, args, value } as never) });
    expect(receipt.status).toBe("success");
  };
  await send(m.tokens.WETH, parseAbi(["function deposit() payable"]) as never, "deposit", [], 10n ** 18n);
  await send(m.tokens.WETH, ERC20_ABI as never, "approve", [m.aave.pool, 10n ** 18n]);
  await send(m.aave.pool, AAVE_POOL_ABI as never, "supply", [m.tokens.WETH, 10n ** 18n, account.address, 0]);
  await send(m.aave.pool, AAVE_POOL_ABI as never, "borrow", [m.tokens.USDC, 1_000_000_000n, 2n, 0, account.address]);
  expect(await wallet.readContract({ address: m.tokens.USDC, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] })).toBe(1_002_234_567n);
  // the forked chain saw none of it
  const upstreamReader = createWalletClient({ chain: base, transport: http(upstream.rpcUrl) }).extend(publicActions);
  expect(await upstreamReader.readContract({ address: m.tokens.USDC, abi: ERC20_ABI, functionName: "balanceOf", args: [account.address] })).toBe(0n);
});
