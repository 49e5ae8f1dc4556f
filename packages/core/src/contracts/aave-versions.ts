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
  // Base's Pool since mid-2026: @aave-dao/aave-address-book's AaveV3Base POOL_IMPL 0xA4AbC5FcBA6D0d7E3D144d6dbF6cb6128599dFdB,
  // the Aave v3.7 implementation, whose revision a public fork test at Base block 48,961,870 records as 11
  11: "3.7",
};

/** the Aave version of a Pool revision, or null when the table does not know it */
export const aaveVersionOf = (revision: number): string | null => AAVE_POOL_VERSIONS[revision] ?? null;
