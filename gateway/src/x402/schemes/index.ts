/**
 * The x402 schemes this service takes, a line each (a scheme is a folder: schemes/scheme.ts says what it
 * supplies). The first is the one a proof no scheme recognizes is read by (`exact`, which refuses it).
 */
import { exactScheme } from "./exact/scheme";
import type { AnyScheme } from "./scheme";
import { sessionScheme } from "./session/scheme";
import { uptoScheme } from "./upto/scheme";

export const PAYMENT_SCHEMES: readonly AnyScheme[] = [
  exactScheme, //      EIP-3009, versions 1 and 2
  sessionScheme, //    batch-settlement vouchers
  uptoScheme, //       a signed maximum, charged what a metered call used
];
