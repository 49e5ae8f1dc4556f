/**
 * The liquidator: Aave's own liquidationCall on any position whose health factor is under 1, with plenty of
 * USDC, as a liquidator on Base runs it under Aave 3.6's rules. Aave is the judge: a liquidation is Aave's
 * verdict, not the runner's. What it took is tallied per Safe.
 *
 * What it asks for is the most the rules allow: it seizes the collateral the position holds most of (in base
 * currency) and asks to cover all the debt; Aave caps that at its close factor (half the position's debt while
 * the health factor is above 0.95 and the position's collateral and debt in the reserves are both at least
 * 2,000 USD, all of it otherwise) and at the collateral the bonus can buy. When that would leave dust (collateral
 * or debt under MIN_LEFTOVER_BASE, 1,000 USD, without closing either out) Aave refuses with MustNotLeaveDust;
 * the liquidator then covers the largest amount Aave accepts. Both amounts come from the rules as a pure function
 * (liquidation-rules.ts, checked against Aave on the fork to the wei). It liquidates again
 * at the runner's next block while the health factor stays under 1.
 */
import { AAVE_LIQUIDATION_ABI } from "@treasury/core/contracts/aave-pool";
import { AAVE_ORACLE_PRICES_ABI } from "@treasury/core/contracts/aave-oracle";
import { AAVE_MARKETS } from "@treasury/core/contracts/chains";
import { ERC20_ABI } from "@treasury/core/contracts/erc20";
import { FORK_RISK, type BaseForkNode } from "../../fixtures/base-fork";
import { accountOf, forkClient, WAD, type ForkClient } from "./fork-client";
import { largestDebtToCover, leavesNoDust, maxLiquidatableDebt, type LiquidationInputs } from "./liquidation-rules";

const m = AAVE_MARKETS.base;
const MAX = 2n ** 255n;

/** what happened to one Safe over a run: its lowest health factor, the liquidations, the collateral they took beyond the debt, the bad debt left (base currency) */
export interface SafeTally {
  lowest: number;
  liquidations: number;
  bonusLost: bigint;
  /** debt Aave wrote off as the USDC reserve's deficit when a liquidation took the last collateral (USDC units) */
  badDebt: bigint;
}
export const newTally = (): SafeTally => ({ lowest: Number.POSITIVE_INFINITY, liquidations: 0, bonusLost: 0n, badDebt: 0n });

/** the collateral asset a position holds most of, by value at the oracle */
async function richestCollateral(client: ForkClient, who: `0x${string}`): Promise<`0x${string}`> {
  const assets = [m.weth, m.btc] as const;
  const [aTokens, prices] = await Promise.all([
    Promise.all(assets.map((a) => client.readContract({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "getReserveAToken", args: [a] }))),
    client.readContract({ address: m.oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetsPrices", args: [[...assets]] }),
  ]);
  const held = await Promise.all(aTokens.map((t) => client.readContract({ address: t, abi: ERC20_ABI, functionName: "balanceOf", args: [who] })));
  const value = (i: number) => (held[i]! * prices[i]!) / 10n ** (i === 0 ? 18n : 8n);
  return value(1) > value(0) ? assets[1] : assets[0];
}

/** what the Pool reads in a liquidationCall of `who`'s USDC debt against `collateral` (WETH or cbBTC), at the latest block */
export async function liquidationInputs(client: ForkClient, collateral: `0x${string}`, who: `0x${string}`): Promise<LiquidationInputs> {
  const risk = FORK_RISK[collateral === m.weth ? "WETH" : "cbBTC"];
  const [aToken, debtToken] = await Promise.all([
    client.readContract({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "getReserveAToken", args: [collateral] }),
    client.readContract({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "getReserveVariableDebtToken", args: [m.usdc] }),
  ]);
  const [account, collateralBalance, reserveDebt, prices] = await Promise.all([
    accountOf(client, who),
    client.readContract({ address: aToken, abi: ERC20_ABI, functionName: "balanceOf", args: [who] }),
    client.readContract({ address: debtToken, abi: ERC20_ABI, functionName: "balanceOf", args: [who] }),
    client.readContract({ address: m.oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetsPrices", args: [[collateral, m.usdc]] }),
  ]);
  return {
    totalDebtBase: account.debt,
    healthFactor: account.hf,
    reserveDebt,
    collateralBalance,
    debtPrice: prices[1]!,
    debtUnit: 10n ** 6n,
    collateralPrice: prices[0]!,
    collateralUnit: collateral === m.weth ? WAD : 10n ** 8n,
    bonusBps: BigInt(risk.liquidationBonusBps),
    protocolFeeBps: BigInt(risk.liquidationProtocolFeeBps),
  };
}

/** a funded liquidator (USDC approved to the Pool); `liquidate` reads positions with `client` */
export async function startLiquidator(fork: BaseForkNode, client: ForkClient) {
  const liquidator = forkClient(fork.rpcUrl);
  await fork.fund(liquidator.account.address, 10_000_000n * 10n ** 6n);
  await liquidator.waitForTransactionReceipt({
    hash: await liquidator.writeContract({ address: m.usdc, abi: ERC20_ABI, functionName: "approve", args: [m.pool, 2n ** 255n] }),
  });
  const call = (collateral: `0x${string}`, who: `0x${string}`, debtToCover: bigint) =>
    ({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "liquidationCall", args: [collateral, m.usdc, who, debtToCover, false] }) as const;
  /** the debt to cover (bench/protection/liquidation-rules.ts): all of it when Aave's own cap leaves no dust (Aave caps it at the block the call runs in), else the largest amount that leaves none */
  const debtToCover = async (collateral: `0x${string}`, who: `0x${string}`): Promise<bigint | null> => {
    const inputs = await liquidationInputs(client, collateral, who);
    const largest = largestDebtToCover(inputs);
    if (largest === 0n) return null;
    return leavesNoDust(inputs, maxLiquidatableDebt(inputs)) ? MAX : largest;
  };

  /** liquidate `who` if its health factor is under 1, tallied `into` its Safe's outcome */
  return async (who: `0x${string}`, into: SafeTally) => {
    const before = await accountOf(client, who);
    if (before.debt === 0n || before.hf >= WAD) return;
    const collateral = await richestCollateral(client, who);
    const amount = await debtToCover(collateral, who);
    if (amount === null) return;
    const deficit = () => client.readContract({ address: m.pool, abi: AAVE_LIQUIDATION_ABI, functionName: "getReserveDeficit", args: [m.usdc] });
    const usdcHeld = () => client.readContract({ address: m.usdc, abi: ERC20_ABI, functionName: "balanceOf", args: [liquidator.account.address] });
    const [deficitBefore, heldBefore] = await Promise.all([deficit(), usdcHeld()]);
    const hash = await liquidator.writeContract({ ...call(collateral, who, amount), gas: 2_000_000n });
    const receipt = await liquidator.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") return;
    const [after, deficitAfter, heldAfter, usdcPrice] = await Promise.all([
      accountOf(client, who),
      deficit(),
      usdcHeld(),
      client.readContract({ address: m.oracle, abi: AAVE_ORACLE_PRICES_ABI, functionName: "getAssetPrice", args: [m.usdc] }),
    ]);
    into.liquidations++;
    into.badDebt += deficitAfter - deficitBefore;
    // the collateral taken beyond the USDC the liquidator paid, both at the oracle (base currency)
    into.bonusLost += before.collateral - after.collateral - ((heldBefore - heldAfter) * usdcPrice) / 10n ** 6n;
  };
}
