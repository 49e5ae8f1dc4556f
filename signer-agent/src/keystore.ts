/**
 * The agent's key: an encrypted keystore (Web3 Secret Storage v3, as ethers
 * writes it), unlocked with a passphrase from the environment or a prompt.
 * A raw private key is accepted only with an explicit development flag.
 */
import fs from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { Wallet } from "ethers";
import { getAddress, type Hex } from "viem";

export async function createKeystore(file: string, passphrase: string, privateKey?: Hex): Promise<`0x${string}`> {
  if (fs.existsSync(file)) throw new Error(`${file} exists; refusing to overwrite a keystore`);
  const wallet = privateKey ? new Wallet(privateKey) : Wallet.createRandom();
  const json = await wallet.encrypt(passphrase);
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, json, { mode: 0o600 });
  return wallet.address as `0x${string}`;
}

export function keystoreAddress(file: string): `0x${string}` {
  const json = JSON.parse(fs.readFileSync(file, "utf8")) as { address: string };
  return getAddress(`0x${json.address.replace(/^0x/, "")}`);
}

export async function unlockKeystore(file: string, passphrase: string): Promise<Hex> {
  const wallet = await Wallet.fromEncryptedJson(fs.readFileSync(file, "utf8"), passphrase);
  return wallet.privateKey as Hex;
}

export async function promptPassphrase(question = "keystore passphrase: "): Promise<string> {
  if (!process.stdin.isTTY) throw new Error("no passphrase: set SIGNER_PASSPHRASE or run in a terminal");
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  // do not echo the passphrase
  (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
    if (s.includes(question)) process.stdout.write(question);
  };
  const answer = await new Promise<string>((resolve) => rl.question(question, resolve));
  rl.close();
  process.stdout.write("\n");
  return answer;
}

export interface KeySource {
  keystore?: string;
  passphrase?: string;
  /** development only: a raw private key, accepted only with allowRawKey */
  rawKey?: Hex;
  allowRawKey?: boolean;
}

export async function loadKey(src: KeySource): Promise<Hex> {
  if (src.rawKey) {
    if (!src.allowRawKey) throw new Error("a raw private key needs the explicit --dev-raw-key flag (development only); use an encrypted keystore");
    return src.rawKey;
  }
  if (!src.keystore || !fs.existsSync(src.keystore)) throw new Error(`no keystore at ${src.keystore}; run: signer-agent init`);
  const passphrase = src.passphrase ?? (await promptPassphrase());
  return unlockKeystore(src.keystore, passphrase);
}
