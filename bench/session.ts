/**
 * The run's working directory (logs, stores, profiles) and the servers it started: every part keeps the
 * servers it starts here, and the run stops them all at its end, whatever happened.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ServerProcess } from "./processes";

export const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-"));
const servers: ServerProcess[] = [];
export const keep = <T extends ServerProcess>(s: T): T => (servers.push(s), s);

export async function json(url: string, init?: RequestInit): Promise<any> {
  const r = await fetch(url, init);
  return r.json();
}

/** stop every server the run started and remove its working directory */
export async function closeSession(): Promise<void> {
  for (const s of servers) await s.stop().catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
}
