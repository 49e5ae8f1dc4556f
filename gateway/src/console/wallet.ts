/**
 * The operator's wallet: the browser's EIP-1193 provider (window.ethereum), which signs the sign-in message and
 * the Safe transactions and sends them; a transaction it sent is awaited here until mined.
 */
import type { Hex } from "viem";

export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}
declare global {
  interface Window {
    ethereum?: Eip1193;
  }
}

export function wallet(): Eip1193 {
  if (!window.ethereum) throw new Error("no wallet in this browser (an EIP-1193 provider, window.ethereum)");
  return window.ethereum;
}

/** text as the hex of its UTF-8 bytes (what personal_sign takes) */
export const toHex = (text: string): Hex => `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;

export async function waitForReceipt(hash: Hex): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const receipt = (await wallet().request({ method: "eth_getTransactionReceipt", params: [hash] })) as { status: string } | null;
    if (receipt) {
      if (receipt.status !== "0x1") throw new Error(`transaction ${hash} reverted`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`transaction ${hash} not mined yet`);
}
