/**
 * npm start: build (or reuse) the stack's bundles (scripts/stack-build.mjs),
 * then run the stack from its bundle; without bundles, through tsx.
 */
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { stackEntries } from "./stack-build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const started = performance.now();
const entries = await stackEntries(root, process.env);
// the stack starts its children with the same entries, and reports the build time
process.env.STACK_ENTRIES = JSON.stringify({ ...entries, build_ms: Math.round(performance.now() - started) });
const stack = entries.args.stack;
if (stack[0] === "--import") {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(stack[2]).href);
} else {
  await import(pathToFileURL(stack[0]).href);
}
