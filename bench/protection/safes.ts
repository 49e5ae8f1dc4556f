/**
 * The scenario's Safes, each owned by an Operator (the signer agent's owner tools): a borrower with 10 WETH
 * supplied and USDC borrowed and spent, and the protected one's registration and delegation to the protection
 * engine through the gateway's API.
 */
import { encodeFunctionData } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import type { BaseForkNode } from "../../fixtures/base-fork";
import { Operator } from "../../signer-agent/src/operator";
import { WAD } from "./fork-client";

const m = AAVE_MARKETS.base;
const COLLATERAL_WETH = 10n * WAD;

/** a Safe with 10 WETH supplied at the start price and `debt` USDC borrowed and spent */
export async function borrower(fork: BaseForkNode, debt: bigint) {
  const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
  await fork.fund(operator.account.address);
  const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
  await operator.fundWeth(COLLATERAL_WETH);
  await operator.supplyAndBorrow(COLLATERAL_WETH, debt);
  await operator.execSafe([
    { to: m.usdc, data: encodeFunctionData({ abi: ERC20_ABI, functionName: "transfer", args: ["0x000000000000000000000000000000000000dEaD", debt] }) },
  ]);
  return { operator, safe };
}

export type Borrower = Awaited<ReturnType<typeof borrower>>;

/**
 * The borrower registered as a managed treasury, its ProtectionModule deployed (park target 25%), the
 * delegation proven to the gateway (protect below `trigger`) and approved by the Safe
 */
export async function delegate(url: string, safe: Borrower, automation: `0x${string}`, trigger: number) {
  const registered = await post(url, "/api/v1/treasuries", {
    wallet_address: safe.safe,
    execution_mode: "managed",
    ownership_proof: await safe.operator.ownershipProof(url, "managed"),
  });
  const treasuryId: string = registered.treasury_id;
  const apiKey: string = registered.api_key;
  const module = await safe.operator.deployModule(automation, 2500);
  // a 503 chain_unavailable (the gateway's read of the delegation's state while the node mines; many Safes
  // registered at once meet it) is answered again with a fresh proof (its nonce may have been spent)
  for (let attempt = 1; ; attempt++) {
    const safe_proof = await safe.operator.delegationProof({
      service: url,
      treasuryId,
      module,
      protectBelowHealth: trigger,
      parkTargetBps: 2500,
    });
    try {
      await post(url, "/api/v1/delegation", { module, safe_proof }, apiKey);
      break;
    } catch (err) {
      if (attempt >= 5 || !String(err).includes("chain_unavailable")) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
  await safe.operator.approveDelegation(module);
  return { treasuryId, apiKey, module };
}

/** the gateway's API, as the treasury's owner calls it */
async function post(url: string, route: string, body: unknown, key?: string) {
  const res = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, any>;
  if (!res.ok) throw new Error(`${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export async function get(url: string, route: string, key: string) {
  const res = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${key}` } });
  return (await res.json()) as Record<string, any>;
}
