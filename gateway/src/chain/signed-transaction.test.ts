/** The relay's check of a signed transaction against its step: each mismatch has its own code. */
import { keccak256, parseGwei, serializeTransaction } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { statusOf } from "../http/errors";
import { TreasuryError } from "@treasury/core/lib/errors";
import { verifySignedTransaction } from "./signed-transaction";

const account = privateKeyToAccount(generatePrivateKey());
const step = { to: "0xA238Dd80C259a72e81d7e4664a9801593F98d1c5" as const, data: "0x617ba037" as const, value: "0", chainId: 8453, signer: account.address };
const sign = (over: Record<string, unknown> = {}) =>
  account.signTransaction({
    type: "eip1559",
    chainId: 8453,
    nonce: 0,
    to: step.to,
    data: step.data,
    value: 0n,
    gas: 100_000n,
    maxFeePerGas: parseGwei("1"),
    maxPriorityFeePerGas: 1n,
    ...over,
  } as never);
const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(TreasuryError);
    return { status: statusOf(e as TreasuryError), code: (e as TreasuryError).code, fields: (e as TreasuryError).fields };
  }
  throw new Error("accepted");
};

describe("verifySignedTransaction", () => {
  it("accepts the step signed by the wallet: the signer and the hash of the signed bytes", async () => {
    const signed = await sign();
    expect(await verifySignedTransaction(signed, step)).toEqual({ signer: account.address, hash: keccak256(signed) });
    const legacy = await account.signTransaction({
      type: "legacy",
      chainId: 8453,
      nonce: 1,
      to: step.to,
      data: step.data,
      value: 0n,
      gas: 100_000n,
      gasPrice: 1n,
    });
    expect((await verifySignedTransaction(legacy, step)).signer).toBe(account.address);
    const eip2930 = await account.signTransaction({
      type: "eip2930",
      chainId: 8453,
      nonce: 1,
      to: step.to,
      data: step.data,
      value: 0n,
      gas: 100_000n,
      gasPrice: 1n,
      accessList: [],
    });
    expect((await verifySignedTransaction(eip2930, { ...step, data: "0x617BA037" })).signer).toBe(account.address); // hex case does not matter
  });

  it("names each mismatch: chain id, to, data, value, signer", async () => {
    expect(await codeOf(verifySignedTransaction(await sign({ chainId: 1 }), step))).toEqual({
      status: 400,
      code: "chain_id_mismatch",
      fields: { field: "chain id", expected: 8453, received: 1 },
    });
    expect((await codeOf(verifySignedTransaction(await sign({ to: "0x0000000000000000000000000000000000000001" }), step))).code).toBe("to_mismatch");
    expect((await codeOf(verifySignedTransaction(await sign({ data: "0x617ba038" }), step))).code).toBe("data_mismatch");
    expect((await codeOf(verifySignedTransaction(await sign({ value: 1n }), step))).fields).toEqual({ field: "value", expected: "0", received: "1" });
    const stranger = privateKeyToAccount(generatePrivateKey());
    const foreign = await stranger.signTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: 0,
      to: step.to,
      data: step.data,
      value: 0n,
      gas: 1n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
    });
    expect(await codeOf(verifySignedTransaction(foreign, step))).toEqual({
      status: 400,
      code: "signer_mismatch",
      fields: { field: "signer", expected: account.address, received: stranger.address },
    });
  });

  it("says what differs, in words and values", async () => {
    const e = await verifySignedTransaction(await sign({ value: 5n }), step).catch((err: TreasuryError) => err);
    expect((e as TreasuryError).message).toBe("value of the signed transaction (5) does not match the envelope (0)");
    const d = await verifySignedTransaction(await sign({ data: "0x12345678aa" }), step).catch((err: TreasuryError) => err);
    expect((d as TreasuryError).message).toBe("data of the signed transaction (0x12345678aa...) does not match the envelope (0x617ba037...)");
    expect((d as TreasuryError).fields).toEqual({ field: "data", expected: "0x617ba037...", received: "0x12345678aa..." });
    // no calldata at all is "0x"; no recipient (a contract creation) is "none"
    const empty = await verifySignedTransaction(await sign({ data: undefined }), step).catch((err: TreasuryError) => err);
    expect((empty as TreasuryError).fields).toEqual({ field: "data", expected: "0x617ba037...", received: "0x..." });
    expect((await verifySignedTransaction(await sign({ data: undefined }), { ...step, data: "0x" })).signer).toBe(account.address);
    const creation = await verifySignedTransaction(await sign({ to: undefined }), step).catch((err: TreasuryError) => err);
    expect((creation as TreasuryError).fields).toEqual({ field: "to", expected: step.to, received: "none" });
    // hex case does not matter on either side
    expect((await verifySignedTransaction(await sign({ data: "0x617BA037" }), { ...step, to: step.to.toLowerCase() as `0x${string}` })).signer).toBe(
      account.address,
    );
  });

  it("refuses what is not a signed transaction, a pre-EIP-155 signature and other types", async () => {
    expect((await codeOf(verifySignedTransaction("0xdeadbeef", step))).code).toBe("invalid_signed_transaction");
    const bad = (await verifySignedTransaction("0xdeadbeef", step).catch((err: TreasuryError) => err)) as TreasuryError;
    expect(bad.message).toMatch(/^signed_transaction is not a signed legacy, EIP-2930 or EIP-1559 transaction: \S/);
    const unsigned = serializeTransaction({
      type: "eip1559",
      chainId: 8453,
      nonce: 0,
      to: step.to,
      data: step.data,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      gas: 1n,
    });
    expect((await codeOf(verifySignedTransaction(unsigned, step))).code).toBe("invalid_signed_transaction");
    const preEip155 = await account.signTransaction({
      type: "legacy",
      nonce: 0,
      to: step.to,
      data: step.data,
      value: 0n,
      gas: 100_000n,
      gasPrice: 1n,
    } as never);
    expect((await codeOf(verifySignedTransaction(preEip155, step))).fields).toMatchObject({ field: "chain id", received: "none (pre-EIP-155)" });
    const blob = await account
      .signTransaction({
        type: "eip7702",
        chainId: 8453,
        nonce: 0,
        to: step.to,
        data: step.data,
        gas: 1n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
        authorizationList: [],
      } as never)
      .catch(() => null);
    if (blob) expect((await codeOf(verifySignedTransaction(blob, step))).code).toBe("invalid_signed_transaction");
  });
});
