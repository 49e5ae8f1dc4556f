/** Prefixed identifiers with 128 random bits (32 hex characters). */
import { randomBytes } from "node:crypto";

export type IdPrefix = "trs" | "agr" | "key" | "dep" | "cnv" | "brw" | "rep" | "tx" | "fee" | "msg" | "req" | "exe" | "eng" | "stx";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString("hex")}`;
}

export const ID_PATTERN = (prefix: IdPrefix) => new RegExp(`^${prefix}_[0-9a-f]{32}$`);
