/** The one declaration of the treasury chains (packages/core/src/contracts/chains.ts) agrees with the Aave address book. */
import { AaveV3Arbitrum, AaveV3Base } from "@aave-dao/aave-address-book";
import { describe, expect, it } from "vitest";
import { AAVE_MARKETS, CHAINS, isTreasuryChain, onTreasuryChains, RATE_CHAINS, TREASURY_CHAINS } from "./chains";

describe("treasury chains", () => {
  it("are Base and Arbitrum, in that order, each with its own entry", () => {
    expect(TREASURY_CHAINS).toEqual(["base", "arbitrum"]);
    expect(Object.keys(CHAINS).sort()).toEqual([...TREASURY_CHAINS].sort());
    for (const chain of TREASURY_CHAINS) {
      expect(CHAINS[chain].chain).toBe(chain);
      expect(CHAINS[chain].market).toBe(AAVE_MARKETS[chain]);
      expect(CHAINS[chain].chainId).toBe(AAVE_MARKETS[chain].chainId);
      expect(RATE_CHAINS).toContain(chain);
    }
    expect(TREASURY_CHAINS.map((c) => [CHAINS[c].displayName, CHAINS[c].chainId])).toEqual([
      ["Base", 8453],
      ["Arbitrum", 42161],
    ]);
  });

  it("name the BTC collateral token by its address-book symbol", () => {
    const books = { base: AaveV3Base.ASSETS, arbitrum: AaveV3Arbitrum.ASSETS } as const;
    for (const chain of TREASURY_CHAINS) {
      const { btcSymbol, market } = CHAINS[chain];
      expect((books[chain] as Record<string, { UNDERLYING: string }>)[btcSymbol]?.UNDERLYING).toBe(market.btc);
    }
    expect(CHAINS.base.btcSymbol).toBe("cbBTC");
    expect(CHAINS.arbitrum.btcSymbol).toBe("WBTC");
  });

  it("isTreasuryChain accepts exactly the treasury chains", () => {
    for (const chain of TREASURY_CHAINS) expect(isTreasuryChain(chain)).toBe(true);
    for (const other of ["ethereum", "Base", "ARBITRUM", "", null, undefined, 8453, {}]) expect(isTreasuryChain(other)).toBe(false);
  });

  it("onTreasuryChains keeps the treasury chains' entries, in their order", () => {
    const picked = onTreasuryChains({ ethereum: "e", arbitrum: "a", base: "b" });
    expect(Object.entries(picked)).toEqual([
      ["base", "b"],
      ["arbitrum", "a"],
    ]);
    expect(onTreasuryChains<string>({})).toEqual({ base: undefined, arbitrum: undefined });
  });
});
