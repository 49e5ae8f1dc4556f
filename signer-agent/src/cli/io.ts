/**
 * Where the command line writes: stdout carries the command's answer (a line,
 * or one JSON document a script can parse); stderr carries progress, a line
 * per step with the seconds since the command started, and notes.
 */
export const out = (line: string): void => void process.stdout.write(`${line}\n`);

export const note = (line: string): void => void process.stderr.write(`${line}\n`);

/** one JSON document on stdout; exact integers (bigint) as decimal strings */
export const printJson = (doc: unknown): void => out(JSON.stringify(doc, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2));

/** a progress reporter for one command: each line on stderr, prefixed with the elapsed seconds */
export function progress(): (line: string) => void {
  const started = Date.now();
  return (line: string) => {
    const seconds = Math.floor((Date.now() - started) / 100);
    process.stderr.write(`[${String(Math.floor(seconds / 10)).padStart(3)}.${seconds % 10}s] ${line}\n`);
  };
}
