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
import { KeystoreError } from "./errors";

export { KeystoreError };

export async function createKeystore(file: string, passphrase: string, privateKey?: Hex): Promise<`0x${string}`> {
  if (fs.existsSync(file)) throw new KeystoreError("keystore_exists", `${file} exists; refusing to overwrite a keystore`);
  const wallet = privateKey ? new Wallet(privateKey) : Wallet.createRandom();
  const json = await wallet.encrypt(passphrase);
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, json, { mode: 0o600 });
  return wallet.address as `0x${string}`;
}

const missing = (file: string | undefined) =>
  new KeystoreError(
    "no_keystore",
    `no keystore at ${file ?? "(none given)"}: create one with \`signer-agent init\` (or point SIGNER_DIR / SIGNER_KEYSTORE at yours)`,
  );

export function keystoreAddress(file: string): `0x${string}` {
  if (!fs.existsSync(file)) throw missing(file);
  let json: { address?: string };
  try {
    json = JSON.parse(fs.readFileSync(file, "utf8")) as { address?: string };
  } catch {
    throw new KeystoreError("not_a_keystore", `${file} is not a keystore (not JSON)`);
  }
  if (typeof json.address !== "string") throw new KeystoreError("not_a_keystore", `${file} is not a keystore (no address in it)`);
  return getAddress(`0x${json.address.replace(/^0x/, "")}`);
}

/** the key, or a KeystoreError in plain words (ethers' own text never reaches the user); `source` names where the passphrase came from */
export async function unlockKeystore(file: string, passphrase: string, source = "SIGNER_PASSPHRASE"): Promise<Hex> {
  if (!fs.existsSync(file)) throw missing(file);
  try {
    const wallet = await Wallet.fromEncryptedJson(fs.readFileSync(file, "utf8"), passphrase);
    return wallet.privateKey as Hex;
  } catch (err) {
    const argument = (err as { argument?: string }).argument;
    if (argument === "password") throw new KeystoreError("wrong_passphrase", `the passphrase does not open the keystore at ${file} (${source})`);
    throw new KeystoreError("not_a_keystore", `${file} is not a keystore this agent can open (Web3 Secret Storage v3 JSON, as \`signer-agent init\` writes)`);
  }
}

export async function promptPassphrase(question = "keystore passphrase: "): Promise<string> {
  if (!process.stdin.isTTY) throw new KeystoreError("no_passphrase", "no passphrase: set SIGNER_PASSPHRASE, or run in a terminal to be asked for it");
  // asked on stderr: stdout stays the command's answer (register's JSON, say)
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  // do not echo the passphrase
  (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
    if (s.includes(question)) process.stderr.write(question);
  };
  const answer = await new Promise<string>((resolve) => rl.question(question, resolve));
  rl.close();
  process.stderr.write("\n");
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
    if (!src.allowRawKey)
      throw new KeystoreError("raw_key_not_allowed", "a raw private key needs the explicit --dev-raw-key flag (development only); use an encrypted keystore");
    return src.rawKey;
  }
  if (!src.keystore || !fs.existsSync(src.keystore)) throw missing(src.keystore);
  if (src.passphrase !== undefined) return unlockKeystore(src.keystore, src.passphrase, "SIGNER_PASSPHRASE");
  return unlockKeystore(src.keystore, await promptPassphrase(), "the passphrase typed");
}
