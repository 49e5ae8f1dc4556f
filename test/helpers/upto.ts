/** x402 `upto` payers for tests: funded, Permit2 approved once, and their proofs made by the official client */
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import { createPermit2ApprovalTx, UptoEvmScheme } from "@x402/evm/upto/client";
import { createPublicClient, createTestClient, http, parseEther } from "viem";
import { baseSepolia } from "viem/chains";
import type { BaseSepoliaNode } from "../../fixtures/base-sepolia";
import { newPayer, type Payer } from "./x402-stack";

/** a funded payer with gas, that approved Permit2 for USDC (upto pulls through Permit2) */
export async function approvedUptoPayer(chain: BaseSepoliaNode): Promise<Payer> {
  const payer = await newPayer(chain);
  const transport = http(chain.rpcUrl);
  await createTestClient({ mode: "anvil", chain: baseSepolia, transport }).setBalance({ address: payer.account.address, value: parseEther("1") });
  const hash = await payer.wallet.sendTransaction({ ...createPermit2ApprovalTx(chain.usdc), chain: baseSepolia, account: payer.account });
  await createPublicClient({ chain: baseSepolia, transport }).waitForTransactionReceipt({ hash });
  return payer;
}

/** the official upto client for a payer */
export function uptoClient(chain: BaseSepoliaNode, payer: Payer): x402Client {
  const publicClient = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
  return new x402Client().register("eip155:84532", new UptoEvmScheme(toClientEvmSigner(payer.account, publicClient)));
}

/** a PAYMENT-SIGNATURE header signing the maximum of a route's upto offer, by the official client */
export async function uptoProof(chain: BaseSepoliaNode, payer: Payer, base: string, path: string): Promise<string> {
  const required = decodePaymentRequiredHeader((await fetch(`${base}${path}`)).headers.get("payment-required")!);
  const upto = { ...required, accepts: required.accepts.filter((a) => a.scheme === "upto") };
  return encodePaymentSignatureHeader(await uptoClient(chain, payer).createPaymentPayload(upto));
}
