/**
 * The running local stack says where it runs: `npm start` writes its ports,
 * URLs, data directory and demo accounts to one file, and the signer agent
 * and operator commands read their defaults from it, so every command the
 * stack prints and the README shows works as written whatever the ports.
 *
 * The file: STACK_FILE, else `.data/stack.json` at the repository root. A file
 * whose stack process is gone is ignored (the built-in defaults apply).
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface StackFile {
  object: "local_stack";
  pid: number;
  started_at: string;
  gateway_url: string;
  gateway_urls: string[];
  fork_rpc_url: string;
  x402_rpc_url: string;
  facilitator_url: string;
  data_dir: string;
  agent: { address: `0x${string}`; dir: string; keystore: string; policy: string };
  operator: { address: `0x${string}`; dir: string; keystore: string };
  accounts: { pay_to: `0x${string}`; fee_recipient: `0x${string}`; automation: `0x${string}` };
}

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export function stackFilePath(env: Record<string, string | undefined> = process.env): string {
  return path.resolve(env.STACK_FILE ?? path.join(REPO_ROOT, ".data", "stack.json"));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** the running stack's file, or null (none, unreadable, or its process is gone) */
export function readStackFile(env: Record<string, string | undefined> = process.env): StackFile | null {
  try {
    const s = JSON.parse(fs.readFileSync(stackFilePath(env), "utf8")) as StackFile;
    return s.object === "local_stack" && alive(s.pid) ? s : null;
  } catch {
    return null;
  }
}

export function writeStackFile(file: string, s: StackFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** remove the file if it is still this process's */
export function removeStackFile(file: string): void {
  try {
    const s = JSON.parse(fs.readFileSync(file, "utf8")) as StackFile;
    if (s.pid === process.pid) fs.rmSync(file);
  } catch {
    // gone already
  }
}
