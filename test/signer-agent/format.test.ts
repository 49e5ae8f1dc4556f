/**
 * Money a person reads, formatted once from exact integers (signer-agent/src/format.ts), and amounts a
 * person types, parsed exactly from their text (cli/amounts.ts): no float on either path.
 */
import { describe, expect, it } from "vitest";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { parseAmount } from "../../signer-agent/src/cli/amounts";
import { UsageError } from "../../signer-agent/src/cli/args";
import { eth, healthFactor, percent, roundUnits, tokenAmount, usdBase, usdc } from "../../signer-agent/src/format";
import { amountMicro } from "../../signer-agent/src/agent";

describe("formatting exact amounts", () => {
  it("rounds half up to the asset's precision: USD to the cent, ETH to 6 decimals, USDC exact", () => {
    expect(usdBase(146_019_999_999n)).toBe("1460.20 USD"); // Aave's 1460.19999999
    expect(usdBase(100_000_000_000n)).toBe("1000.00 USD");
    expect(eth(323_399_999_999_999_999n, "WETH")).toBe("0.3234 WETH"); // not 0.323399999999999999
    expect(eth(1n)).toBe("0 ETH");
    expect(usdc(1_234_567_891n)).toBe("1234.567891 USDC");
    expect(usdc(490_000_000n)).toBe("490 USDC");
    expect(tokenAmount(161_592_769_711_023_391n, AAVE_MARKETS.base.weth)).toBe("0.161593 WETH");
    expect(tokenAmount(12_345_678n, AAVE_MARKETS.base.btc)).toBe("0.123457 cbBTC");
    expect(roundUnits(-15n, 1, 0)).toBe("-2");
  });

  it("a health factor is rounded down (never shown safer than it is); a percentage to 2 decimals", () => {
    expect(healthFactor(1_049_999_999_999_999_999n)).toBe("1.04");
    expect(healthFactor(null)).toBe("none (no debt)");
    expect(percent(1n, 3n)).toBe("33.33%");
    expect(percent(2n, 3n)).toBe("66.67%");
    expect(percent(0n, 0n)).toBe("0.00%");
  });
});

describe("parsing typed amounts", () => {
  it("is exact from the text, whatever a float would make of it", () => {
    expect(parseAmount("run", "amount", "0.1", "USDC", 6) + parseAmount("run", "amount", "0.2", "USDC", 6)).toBe(300_000n);
    expect(parseAmount("run", "amount", "1234.567891", "USDC", 6)).toBe(1_234_567_891n);
    expect(parseAmount("operator fund", "<weth>", "0.323399999999999999", "WETH", 18, 18)).toBe(323_399_999_999_999_999n);
    expect(amountMicro("500")).toBe(500_000_000n);
    expect(amountMicro(0.3)).toBe(300_000n);
    expect(() => amountMicro("1e3")).toThrow(RangeError);
  });

  it("refuses what is not an amount, naming it and what to write", () => {
    const refusal = (text: string) => {
      try {
        parseAmount("run", "amount", text, "USDC", 6);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      throw new Error(`${text} was accepted`);
    };
    expect(refusal("500usdc")).toBe('amount "500usdc" is not a number of USDC: write 500 (whole USDC, up to 6 decimals)');
    expect(refusal("1,000")).toBe('amount "1,000" is not a number of USDC: write 1000 (no thousands separators; whole USDC, up to 6 decimals)');
    expect(refusal("2,5")).toContain("write 2.5 (a point for decimals, not a comma");
    expect(refusal("$20")).toContain("write 20");
    expect(refusal("0.0000001")).toContain("has 7 decimals");
    expect(refusal("0")).toContain("is zero");
    expect(refusal("1e3")).toBe('amount "1e3" is not a number of USDC: write digits with at most one point, e.g. 500 (whole USDC, up to 6 decimals)');
    expect(refusal("0.5 eth")).toContain("write 0.5");
  });
});
