/**
 * Where the time goes: the top self-time functions of a V8 CPU profile
 * (node --cpu-prof), grouped by function and file, with their share of the
 * profile's busy (non-idle) time; and the same self time summed per source
 * module (`modules`): a bundle's function is counted in the module esbuild
 * marked it with (its `// gateway/src/...` comment), so the gateway's own
 * files, each package and Node's parts can be told apart.
 */
import fs from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface HotSpot {
  fn: string;
  where: string;
  self_pct: number;
}

/** a stack bundle: built (scripts/stack-build.mjs) or copied for a run (processes.ts) */
const BUNDLE = /\/\.cache\/treasury-(stack|bench)\//;

const shortUrl = (url: string) => {
  const p = url.replace(/^file:\/\//, "");
  const nm = p.lastIndexOf("node_modules/");
  if (nm >= 0) return p.slice(nm + "node_modules/".length);
  return BUNDLE.test(p) ? `bundle:${path.basename(p)}` : path.relative(process.cwd(), p) || p;
};

/** the module of a line of a stack bundle: the last esbuild `// path` marker above it */
const bundleModules = new Map<string, { line: number; module: string }[]>();
function moduleOf(url: string, line: number): string {
  if (!url) return "(native)";
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0]}`;
  const file = url.replace(/^file:\/\//, "");
  if (!BUNDLE.test(file)) {
    const short = shortUrl(url);
    // a package outside the bundle (a native binding's wrapper, a lazily loaded page): summed as the package
    return file.includes("node_modules/")
      ? short
          .split("/")
          .slice(0, short.startsWith("@") ? 2 : 1)
          .join("/")
      : short;
  }
  let marks = bundleModules.get(file);
  if (!marks) {
    marks = [];
    const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n") : [];
    for (let i = 0; i < lines.length; i++) {
      const m = /^\/\/ (\S+\.[cm]?[jt]s)$/.exec(lines[i]!);
      if (m) marks.push({ line: i, module: m[1]!.replace(/^.*node_modules\//, "") });
    }
    bundleModules.set(file, marks);
  }
  let found = "(bundle)";
  for (const m of marks) {
    if (m.line > line) break;
    found = m.module;
  }
  // a package's files are summed as the package; the gateway's own, file by file
  return found.startsWith("gateway/") || found.startsWith("signer-agent/")
    ? found
    : found
        .split("/")
        .slice(0, found.startsWith("@") ? 2 : 1)
        .join("/");
}

/**
 * The top self-time functions, counting only the samples taken `skipMs` after the process started (its start-up
 * left out) and, with `untilMs`, before that time (one load's window of a process that served several)
 */
export function hotSpots(
  file: string,
  skipMs = 0,
  top = 12,
  untilMs = Infinity,
): { busy_pct: number; spots: HotSpot[]; inclusive: HotSpot[]; modules: { module: string; self_pct: number }[] } {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const hits = new Map<number, number>();
  let at = 0;
  let counted = 0;
  profile.samples.forEach((s, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < skipMs * 1000 || at > untilMs * 1000) return;
    counted++;
    hits.set(s, (hits.get(s) ?? 0) + 1);
  });
  const byFn = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busy = 0;
  for (const n of profile.nodes) {
    const h = hits.get(n.id) ?? 0;
    if (!h) continue;
    const name = n.callFrame.functionName || "(anonymous)";
    if (name === "(idle)") continue;
    busy += h;
    const module = moduleOf(n.callFrame.url, n.callFrame.lineNumber);
    byModule.set(module, (byModule.get(module) ?? 0) + h);
    const key = `${name}\t${n.callFrame.url ? `${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}` : ""}`;
    byFn.set(key, (byFn.get(key) ?? 0) + h);
  }
  const spots = [...byFn.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, h]) => {
      const [fn, where] = k.split("\t");
      return { fn: fn!, where: where!, self_pct: Number(((100 * h) / busy).toFixed(1)) };
    });
  // inclusive time (self + callees) of named functions, each counted once per stack (recursion not twice)
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, h] of hits) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (!n.callFrame.url || n.callFrame.functionName === "" || n.callFrame.functionName === "(idle)") continue;
      const key = `${n.callFrame.functionName}\t${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + h);
    }
  }
  const toSpots = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, h]) => {
        const [fn, where] = k.split("\t");
        return { fn: fn!, where: where!, self_pct: Number(((100 * h) / busy).toFixed(1)) };
      });
  const modules = [...byModule.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25)
    .map(([module, h]) => ({ module, self_pct: Number(((100 * h) / busy).toFixed(1)) }));
  return { busy_pct: Number(((100 * busy) / counted).toFixed(1)), spots, inclusive: toSpots(inclusive, 40), modules };
}
