/** Prefixed identifiers with 128 random bits (32 hex characters). */
import { randomBytes } from "node:crypto";

/** the service's own kinds; an action declares its receipt prefix (actions/*.ts `idPrefix`) */
export type IdPrefix = "trs" | "agr" | "key" | "tx" | "fee" | "msg" | "req" | "exe" | "eng" | "stx" | (string & {});

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString("hex")}`;
}

export const ID_PATTERN = (prefix: IdPrefix) => new RegExp(`^${prefix}_[0-9a-f]{32}$`);
