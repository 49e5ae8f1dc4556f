/**
 * The fees of a replacement: a transaction still pending is signed again at its nonce with both fees raised, so
 * the node takes the new one in its place (a node refuses a replacement that does not raise both fees by its
 * minimum bump, 10% on geth and Anvil; 12.5% here, the most any common client asks) and the block builder
 * includes it even when the base fee rose above the first one's max fee (the max fee is at least twice the
 * current base fee plus the tip, as fee estimators leave room for the base fee to grow for a few blocks).
 */

/** the least raise of both fees a replacement carries, in thousandths */
export const REPLACEMENT_BUMP_PER_MILLE = 1125n;

export interface Eip1559Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

const bumped = (fee: bigint) => {
  const up = (fee * REPLACEMENT_BUMP_PER_MILLE + 999n) / 1000n;
  return up > fee ? up : fee + 1n;
};

/** the fees of the replacement of a transaction signed with `fees`, at a time the latest block's base fee is `baseFee` */
export function replacementFees(fees: Eip1559Fees, baseFee: bigint): Eip1559Fees {
  const maxPriorityFeePerGas = bumped(fees.maxPriorityFeePerGas);
  const floor = 2n * baseFee + maxPriorityFeePerGas;
  const raised = bumped(fees.maxFeePerGas);
  return { maxPriorityFeePerGas, maxFeePerGas: raised > floor ? raised : floor };
}
