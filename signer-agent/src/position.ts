/**
 * A wallet's Aave position and balances read on the agent's own RPC, exact:
 * Aave's USD base (8 decimals) for collateral and debt, the health factor in
 * 1e18, token balances in their units. Formatted only where a person reads
 * them (format.ts); a --json document carries the exact decimal strings.
 */
import type { PublicClient } from "viem";
import { AAVE_POOL_ABI } from "@treasury/core/contracts/aave-pool";
import { CHAINS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { exact, healthFactor, percent, roundUnits, tokenAmount, usdBase, usdc } from "./format";

export interface WalletPosition {
  chain_id: number;
  chain: string;
  /** Aave's base currency: USD with 8 decimals */
  collateral_base: bigint;
  debt_base: bigint;
  /** 1e18; null without debt (Aave's is infinite) */
  health_factor_wad: bigint | null;
  /** the wallet's own ETH (gas), wei */
  eth_wei: bigint;
  /** USDC in the wallet, micro-USDC */
  usdc: bigint;
  /** supplied to Aave (aToken balances), token units */
  supplied: { usdc: bigint; weth: bigint; btc: bigint };
  btc_symbol: string;
}

/** the position of `address` on the chain `client` answers for, or null when that chain has no treasury market */
export async function readPosition(client: PublicClient, address: `0x${string}`): Promise<WalletPosition | null> {
  const chainId = await client.getChainId();
  const entry = Object.values(CHAINS).find((c) => c.chainId === chainId);
  if (!entry) return null;
  const m = entry.market;
  const reserves = await Promise.all(
    [m.usdc, m.weth, m.btc].map((asset) => client.readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getReserveData", args: [asset] })),
  );
  const balance = (token: `0x${string}`) => client.readContract({ address: token, abi: ERC20_ABI, functionName: "balanceOf", args: [address] });
  const [[collateral, debt, , , , hf], eth, walletUsdc, [aUsdc, aWeth, aBtc]] = await Promise.all([
    client.readContract({ address: m.pool, abi: AAVE_POOL_ABI, functionName: "getUserAccountData", args: [address] }),
    client.getBalance({ address }),
    balance(m.usdc),
    Promise.all(reserves.map((r) => balance(r.aTokenAddress))),
  ]);
  return {
    chain_id: chainId,
    chain: entry.chain,
    collateral_base: collateral,
    debt_base: debt,
    health_factor_wad: debt === 0n ? null : hf,
    eth_wei: eth,
    usdc: walletUsdc,
    supplied: { usdc: aUsdc!, weth: aWeth!, btc: aBtc! },
    btc_symbol: entry.btcSymbol,
  };
}

/** the position as lines a person reads */
export function positionLines(p: WalletPosition): string[] {
  const supplied = [
    p.supplied.usdc > 0n ? usdc(p.supplied.usdc) : null,
    p.supplied.weth > 0n ? tokenAmount(p.supplied.weth, CHAINS[p.chain as keyof typeof CHAINS].market.weth) : null,
    p.supplied.btc > 0n ? tokenAmount(p.supplied.btc, CHAINS[p.chain as keyof typeof CHAINS].market.btc) : null,
  ].filter(Boolean);
  return [
    `collateral  ${usdBase(p.collateral_base)}`,
    `debt        ${usdBase(p.debt_base)}`,
    `LTV         ${percent(p.debt_base, p.collateral_base)}`,
    `health      ${healthFactor(p.health_factor_wad)}`,
    `supplied    ${supplied.length ? supplied.join(", ") : "nothing"}`,
    `wallet      ${usdc(p.usdc)}, ${roundUnits(p.eth_wei, 18, 6)} ETH`,
  ];
}

/** the position as a JSON document: exact decimal strings */
export function positionDocument(p: WalletPosition) {
  return {
    chain: p.chain,
    chain_id: p.chain_id,
    collateral_usd: exact(p.collateral_base, 8),
    debt_usd: exact(p.debt_base, 8),
    ltv_pct: p.collateral_base > 0n ? percent(p.debt_base, p.collateral_base).replace(/%$/, "") : null,
    health_factor: p.health_factor_wad === null ? null : exact(p.health_factor_wad, 18),
    supplied: { usdc: exact(p.supplied.usdc, 6), weth: exact(p.supplied.weth, 18), [p.btc_symbol.toLowerCase()]: exact(p.supplied.btc, 8) },
    wallet: { usdc: exact(p.usdc, 6), eth: exact(p.eth_wei, 18) },
  };
}

/** the position in one line (run's "on chain:") */
export function positionLine(p: WalletPosition): string {
  return `collateral ${usdBase(p.collateral_base)}, debt ${usdBase(p.debt_base)}, LTV ${percent(p.debt_base, p.collateral_base)}, health ${healthFactor(p.health_factor_wad)}; wallet ${usdc(p.usdc)}, supplied ${usdc(p.supplied.usdc)}`;
}
