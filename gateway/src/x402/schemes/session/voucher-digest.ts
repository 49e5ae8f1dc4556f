/**
 * The EIP-712 digest a session voucher's signature signs (the scheme's `Voucher(bytes32 channelId,uint128
 * maxClaimableAmount)` in its domain on this chain), as viem's `hashTypedData` gives it, with the domain's
 * separator and the type's hash computed once: a voucher's digest is then two keccaks of fixed-size input
 * (the struct, then 0x1901 with the separator), not the domain's and the type's again for every voucher.
 */
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes } from "@x402/evm";
import { concatHex, getAddress, hashDomain, keccak256, numberToHex, toHex, type Hex } from "viem";
import { X402_CHAIN_ID } from "../../payment-match";

/** the voucher's domain: the scheme's name and version, this chain, the BatchSettlement contract */
export const VOUCHER_DOMAIN = { ...BATCH_SETTLEMENT_DOMAIN, chainId: X402_CHAIN_ID, verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS) };

const DOMAIN_SEPARATOR = hashDomain({
  domain: { ...VOUCHER_DOMAIN, chainId: BigInt(VOUCHER_DOMAIN.chainId) },
  types: {
    EIP712Domain: [
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
    ],
  },
});
/** keccak256 of the type's encoding: `Voucher(bytes32 channelId,uint128 maxClaimableAmount)` */
const TYPE_HASH = keccak256(toHex(`Voucher(${voucherTypes.Voucher.map((f) => `${f.type} ${f.name}`).join(",")})`));

/** the digest of a voucher (both fields are one 32-byte word each: the id as it is, the amount left-padded) */
export function voucherDigest(channelId: Hex, maxClaimableAmount: bigint): Hex {
  const struct = keccak256(concatHex([TYPE_HASH, channelId, numberToHex(maxClaimableAmount, { size: 32 })]));
  return keccak256(concatHex(["0x1901", DOMAIN_SEPARATOR, struct]));
}
