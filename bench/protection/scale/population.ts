/**
 * The watched Safes of the scale bench, made two ways:
 *
 * - real: a Safe made through the signer agent's Operator (bench/protection/safes.ts: created, 10 WETH supplied,
 *   USDC borrowed and spent, registered, its ProtectionModule deployed, the delegation proven through the
 *   gateway's API and approved by the Safe), several owners at once. These are the Safes that must act.
 * - cloned: a healthy position written into a fresh address with state writes (anvil_setStorageAt): a real
 *   template Safe's aWETH and variable-debt USDC balances and its Aave user configuration copied to the new
 *   address, the Safe proxy's code and its singleton and module-list slots copied too (so `isModuleEnabled`
 *   of the template's module answers true), and its treasury and proven delegation rows written through the
 *   store's own API (TreasuryStore.insert, DelegationStore.attachProven). The engine reads such a Safe as it
 *   reads a real one (active delegation, a position on Aave); it never has to act on it (it stays healthy).
 */
import { createWalletClient, encodeAbiParameters, http, keccak256, pad, publicActions, type Hex } from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { base } from "viem/chains";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { newId } from "@treasury/core/lib/ids";
import type { BaseForkNode } from "../../../fixtures/base-fork";
import type { AppContext } from "../../../gateway/src/services/context";
import { borrower, delegate } from "../safes";

const m = AAVE_MARKETS.base;
export const USDC = 10n ** 6n;

export interface RealSafe {
  safe: `0x${string}`;
  treasuryId: string;
  module: `0x${string}`;
  apiKey: string;
}

/**
 * USDC supplied to Aave for `count` more borrowers of `debt` (the fixture's LP supplied 5 M USDC: 300 Safes at
 * 16,500 each), by a lender funded on the fork
 */
async function lendFor(fork: BaseForkNode, count: number, debt: bigint): Promise<void> {
  const amount = BigInt(count) * debt;
  if (amount === 0n) return;
  const lender = createWalletClient({
    account: privateKeyToAccount(generatePrivateKey()),
    chain: base,
    transport: http(fork.rpcUrl),
    pollingInterval: 20,
  }).extend(publicActions);
  await fork.fund(lender.account.address, amount);
  const send = async (hash: Hex) => {
    if ((await lender.waitForTransactionReceipt({ hash })).status !== "success") throw new Error(`the lender's transaction reverted (${hash})`);
  };
  await send(await lender.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, amount] }));
  await send(await lender.writeContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "supply", args: [m.usdc, amount, lender.account.address, 0] }));
}

/** `count` real Safes, `concurrency` owners at a time; each borrowed `debt` USDC against 10 WETH (lent to Aave first) */
export async function makeRealSafes(
  fork: BaseForkNode,
  url: string,
  automation: `0x${string}`,
  count: number,
  debt: bigint,
  trigger: number,
  concurrency = 8,
): Promise<RealSafe[]> {
  await lendFor(fork, count, debt);
  const out: RealSafe[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const b = await borrower(fork, debt);
      const d = await delegate(url, b, automation, trigger);
      out.push({ safe: b.safe, treasuryId: d.treasuryId, module: d.module, apiKey: d.apiKey });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return out;
}

async function rpc<T>(url: string, calls: { method: string; params: unknown[] }[]): Promise<T[]> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(calls.map((c, i) => ({ jsonrpc: "2.0", id: i, ...c }))),
  });
  const out = (await res.json()) as { id: number; result?: T; error?: unknown }[];
  out.sort((a, b) => a.id - b.id);
  const bad = out.find((r) => r.error);
  if (bad) throw new Error(`${calls[bad.id]!.method}: ${JSON.stringify(bad.error)}`);
  return out.map((r) => r.result as T);
}

const mappingSlot = (key: `0x${string}`, slot: bigint) => keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [key, slot]));
const ZERO = pad("0x0");

/** the slot index of `contract`'s mapping keyed by `who` whose value is non-zero, scanning 0..255 */
async function findMappingSlot(url: string, contract: `0x${string}`, who: `0x${string}`): Promise<{ slot: bigint; value: Hex }> {
  const slots = Array.from({ length: 256 }, (_, i) => BigInt(i));
  const values = await rpc<Hex>(
    url,
    slots.map((s) => ({ method: "eth_getStorageAt", params: [contract, mappingSlot(who, s), "latest"] })),
  );
  const i = values.findIndex((v) => BigInt(v) !== 0n);
  if (i < 0) throw new Error(`no mapping slot of ${who} in ${contract}`);
  return { slot: slots[i]!, value: values[i]! };
}

/** what is copied from the template into each clone */
export interface CloneTemplate {
  writes: { contract: `0x${string}`; slot: bigint; value: Hex }[];
  safeCode: Hex;
  safeSlots: { key: Hex; value: Hex }[];
  treasuryId: string;
  module: `0x${string}`;
}

/** read the template Safe's Aave state and Safe slots (a real, delegated Safe) */
export async function cloneTemplate(fork: BaseForkNode, template: RealSafe): Promise<CloneTemplate> {
  const r = fork.manifest.reserves;
  const writes: CloneTemplate["writes"] = [];
  for (const contract of [r.WETH.a_token, r.USDC.variable_debt_token, m.pool as `0x${string}`]) {
    const { slot } = await findMappingSlot(fork.rpcUrl, contract, template.safe);
    writes.push({ contract, slot, value: ZERO });
  }
  const [code] = await rpc<Hex>(fork.rpcUrl, [{ method: "eth_getCode", params: [template.safe, "latest"] }]);
  // Safe 1.4.1: slot 0 the singleton, slot 1 the modules' linked list (SENTINEL -> module -> SENTINEL), owners at 2
  const sentinel = "0x0000000000000000000000000000000000000001" as const;
  const keys: Hex[] = [pad("0x0"), mappingSlot(sentinel, 1n), mappingSlot(template.module, 1n)];
  const values = await rpc<Hex>(
    fork.rpcUrl,
    keys.map((k) => ({ method: "eth_getStorageAt", params: [template.safe, k, "latest"] })),
  );
  for (const w of writes) {
    const [v] = await rpc<Hex>(fork.rpcUrl, [{ method: "eth_getStorageAt", params: [w.contract, mappingSlot(template.safe, w.slot), "latest"] }]);
    w.value = v!;
  }
  return { writes, safeCode: code!, safeSlots: keys.map((key, i) => ({ key, value: values[i]! })), treasuryId: template.treasuryId, module: template.module };
}

/**
 * `count` clones of the template: state writes on the fork (a JSON-RPC batch per 100 clones) and their rows in
 * the store (a transaction per 500). Returns their addresses.
 */
export async function makeClones(
  fork: BaseForkNode,
  ctx: AppContext,
  t: CloneTemplate,
  automation: `0x${string}`,
  count: number,
  trigger: number,
): Promise<`0x${string}`[]> {
  const addresses = Array.from({ length: count }, () => privateKeyToAccount(generatePrivateKey()).address);
  for (let i = 0; i < addresses.length; i += 100) {
    const calls: { method: string; params: unknown[] }[] = [];
    for (const a of addresses.slice(i, i + 100)) {
      calls.push({ method: "anvil_setCode", params: [a, t.safeCode] });
      for (const s of t.safeSlots) calls.push({ method: "anvil_setStorageAt", params: [a, s.key, s.value] });
      for (const w of t.writes) calls.push({ method: "anvil_setStorageAt", params: [w.contract, mappingSlot(a, w.slot), w.value] });
    }
    await rpc(fork.rpcUrl, calls);
  }
  const template = (await ctx.stores.treasuries.get(t.treasuryId))!;
  const at = new Date().toISOString();
  for (let i = 0; i < addresses.length; i += 500) {
    await ctx.db.transaction(async () => {
      for (const a of addresses.slice(i, i + 500)) {
        const id = newId("trs");
        await ctx.stores.treasuries.insert({ ...template, id, walletAddress: a, createdAt: at, updatedAt: at });
        await ctx.stores.delegations.attachProven({
          treasuryId: id,
          chain: "base",
          safe: a,
          module: t.module,
          automation,
          protectBelowHealth: trigger,
          proof: { cloned_from: t.treasuryId },
          at,
        });
      }
    });
  }
  return addresses;
}
