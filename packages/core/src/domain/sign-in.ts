/**
 * The console's operator sign-in: a Sign-In with Ethereum message (EIP-4361)
 * that a Safe owner signs with personal_sign. The service rebuilds the exact
 * text from its fields (never trusting a text the client sends), so what the
 * owner reads in the wallet is what is verified: this service (its URI), the
 * owner, the Safe it opens, a nonce spent once, and a time window.
 */
import { getAddress } from "viem";

export interface SignInFacts {
  /** the host the console is served from (the EIP-4361 domain) */
  domain: string;
  /** the console's URI on this service */
  uri: string;
  owner: `0x${string}`;
  safe: `0x${string}`;
  chainId: number;
  nonce: string;
  issuedAt: string;
  expiresAt: string;
}

export function signInMessage(f: SignInFacts): string {
  return [
    `${f.domain} wants you to sign in with your Ethereum account:`,
    getAddress(f.owner),
    "",
    `Open the treasury console of the Safe ${getAddress(f.safe)} as one of its owners. Signing moves no funds.`,
    "",
    `URI: ${f.uri}`,
    "Version: 1",
    `Chain ID: ${f.chainId}`,
    `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt}`,
    `Expiration Time: ${f.expiresAt}`,
    "Resources:",
    `- safe:${getAddress(f.safe)}`,
  ].join("\n");
}
