/**
 * Which Aave V3 version a Pool runs, by the revision its implementation declares (`POOL_REVISION()`, the number
 * its proxy was initialized at). Each line is read from the Pool's source of that version; a revision without a
 * line is unknown (null), never guessed from its neighbours.
 */
export const AAVE_POOL_VERSIONS: Readonly<Record<number, string>> = {
  // @aave/core-v3 3.0.2, contracts/protocol/pool/Pool.sol: POOL_REVISION = 0x1
  1: "3.0",
  // @aave-dao/aave-v3-origin 3.6.0, src/contracts/instances/PoolInstance.sol: POOL_REVISION = 10
  10: "3.6",
};

/** the Aave version of a Pool revision, or null when the table does not know it */
export const aaveVersionOf = (revision: number): string | null => AAVE_POOL_VERSIONS[revision] ?? null;
