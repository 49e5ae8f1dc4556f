import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes } from "@x402/evm";
import { getAddress, hashTypedData, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { X402_CHAIN_ID } from "../../payment-match";
import { VOUCHER_DOMAIN, voucherDigest } from "./voucher-digest";

const viemDigest = (channelId: Hex, maxClaimableAmount: bigint) =>
  hashTypedData({
    domain: { ...BATCH_SETTLEMENT_DOMAIN, chainId: X402_CHAIN_ID, verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS) },
    types: voucherTypes,
    primaryType: "Voucher",
    message: { channelId, maxClaimableAmount },
  });

describe("voucherDigest", () => {
  it("is viem's hashTypedData of the voucher in the scheme's domain on this chain, for amounts from 0 to uint128's maximum", () => {
    const ids: Hex[] = [`0x${"00".repeat(32)}`, `0x${"ab".repeat(32)}`, "0x4e7a1c2b3d4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"];
    for (const id of ids)
      for (const amount of [0n, 1n, 1_000n, 123_456_789_012n, 2n ** 128n - 1n]) expect(voucherDigest(id, amount)).toBe(viemDigest(id, amount));
  });

  it("the domain is the scheme's, on this chain, at the BatchSettlement contract", () => {
    expect(VOUCHER_DOMAIN).toEqual({
      name: "x402 Batch Settlement",
      version: "1",
      chainId: X402_CHAIN_ID,
      verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS),
    });
    // one field off, another digest
    expect(voucherDigest(`0x${"ab".repeat(32)}`, 1_000n)).not.toBe(voucherDigest(`0x${"ab".repeat(32)}`, 1_001n));
  });
});
