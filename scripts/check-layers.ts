/**
 * The repository's import rules, checked (`npm run lint` runs this after ESLint; CI runs `npm run lint`):
 * - packages/core/src (the workspace package @treasury/core: what the gateway and the signer agent share)
 *   imports only downward along CORE_LAYERS, and gateway/src along LAYERS, each without an import cycle.
 *   The core package is below every layer of the gateway: the gateway imports it by name
 *   (`@treasury/core/domain/money`), the core package never imports the gateway.
 * - BOUNDARIES, over every file, tests included: the core package imports nothing of the gateway or the signer
 *   agent, the signer agent nothing of the gateway (it shares the gateway's code through @treasury/core), and
 *   no one reaches packages/core by a relative path.
 *
 * Every import counts: `import`, `import type`, `export ... from`, `import()` and `import("...")` types. A type
 * import is erased at run time, but it still says which part knows which, so a cycle or a climb through
 * types alone fails too (ESLint's import/no-cycle skips type imports, which is why this is a script).
 * Tests (`*.test.ts`) are not part of the layering. A relative import may not leave gateway/src, nor
 * packages/core/src (packages are imported by name).
 *
 *   npx tsx scripts/check-layers.ts            fails (exit 1) on any cycle, climb, bypass, file of no layer or crossed boundary
 *   npx tsx scripts/check-layers.ts --quiet    the same, printing only what is wrong
 *   npx tsx scripts/check-layers.ts --root DIR another tree's gateway/src (e.g. an older commit's, to compare)
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** the workspace package both sides share, its name and its sources (from the repository's root) */
export const CORE_NAME = "@treasury/core";
export const CORE_SRC = "packages/core/src";

/**
 * The core package's layer order, lowest first (the same rule as LAYERS). All of it is below the gateway's
 * lowest layer.
 */
export const CORE_LAYERS: readonly (readonly string[])[] = [
  ["lib"], // errors and their codes, ids, the keep-alive POST the RPC transport uses
  ["contracts"], // ABIs, addresses, the chain and market registry (from @aave-dao/aave-address-book)
  ["domain"], // pure rules and types: money, fees, position, policy, statements, credential
  ["schemas", "actions"], // the declarations: the shared schemas and the actions declared with them
  ["chain"], // the chain reads both sides make: RPC transport, envelope plans, market and Anvil reads
];

/**
 * The gateway's layer order, lowest first: a file may import its own layer and the layers before it, never one
 * after. A layer is directories (`lib`) or root files (`config.ts`) of gateway/src. Within a layer, anything goes
 * but a cycle. Below them all: the core package (CORE_LAYERS), imported by name.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["lib"], // the gateway's own helpers: clock, secrets, canonical JSON, signature recovery
  ["schemas"], // the gateway's request/response schemas
  ["chain"], // the chain adapter: Safe transactions, signed transactions, the sandbox chain, landed checks
  ["store"], // the database contract, its two backends, migrations, one store per table group
  ["events"], // where the event log goes out: webhook targets (SSRF guard), signed sending, the delivery worker
  ["config.ts"], // the process's configuration
  ["x402"], // x402 payments: matching, prices, bazaar, the facilitator and its client, the payment gate
  ["services"], // the rules that need state: the service context and every service
  ["protection"], // the protection engine and the Safe executor (their own process)
  ["http"], // the HTTP machinery: route declarations, errors to statuses, rate limits, OpenAPI
  ["mcp"], // MCP tools derived from the routes
  ["routes"], // the endpoints, each calling services
  ["console"], // the /console page
  ["app.ts"], // the Express assembly
  ["server.ts"], // the process: store, context, app, listening
  ["main.ts"], // the entry point
];

/** imports a layer may not make although they go down: the endpoints reach the store and the chain through services only */
export const BYPASSES: readonly { from: string; to: readonly string[]; why: string }[] = [
  { from: "routes", to: ["store", "chain"], why: "routes call services" },
  { from: "mcp", to: ["store", "chain"], why: "MCP tools are served by their REST routes" },
];

/**
 * Packages a layer may not import (paths from gateway/src; tests are not layered): the HTTP framework stays in
 * the HTTP layer and above. The payment gate and the services take a request's method, path and headers and
 * return outcomes; the HTTP stages write them. `except`: files that are themselves an HTTP server of their own
 * process (the local facilitator's).
 */
export const PACKAGE_BANS: readonly { from: readonly string[]; packages: readonly string[]; except?: readonly string[]; why: string }[] = [
  {
    from: ["x402/", "services/"],
    packages: ["express", "x402-express"],
    except: ["x402/facilitator/server.ts"],
    why: "no HTTP framework below the HTTP layer: the gate returns an outcome, the HTTP stage writes it",
  },
];

/** relative imports that leave gateway/src may go here only (from the repository's root): nowhere, the core package is imported by name */
export const OUTSIDE_ALLOWED: readonly string[] = [];

/**
 * What the files under `from` (tests included) may not import by a relative path, whatever their layer (paths
 * from the repository's root). By name, only the core package can be imported, and every side may.
 */
export const BOUNDARIES: readonly { from: readonly string[]; to: readonly string[]; why: string }[] = [
  { from: ["packages/core/"], to: ["gateway/", "signer-agent/"], why: "the core package is below the gateway and the signer agent" },
  { from: ["signer-agent/"], to: ["gateway/"], why: "the signer agent shares the gateway's code through @treasury/core only" },
  {
    from: ["gateway/", "signer-agent/", "test/", "bench/", "scripts/", "fixtures/"],
    to: ["packages/core/"],
    why: "the core package is imported by name (@treasury/core/...)",
  },
];

export interface Edge {
  from: string;
  to: string;
  line: number;
  typeOnly: boolean;
}

export interface LayerReport {
  files: string[];
  edges: Edge[];
  /** each a list of files where each imports the next and the last imports the first */
  cycles: string[][];
  /** an import of a later layer: "from -> to (layer of from < layer of to)" */
  climbs: string[];
  /** imports that go down past a layer that must be gone through (BYPASSES) */
  bypasses: string[];
  /** files that belong to no declared layer, and imports leaving gateway/src for elsewhere than OUTSIDE_ALLOWED */
  strays: string[];
}

const isSource = (f: string) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.endsWith(".d.ts");

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p));
    else if (isSource(p)) out.push(p);
  }
  return out;
}

/** the module specifiers a file imports, with their line and whether only types are imported */
export function importsOf(file: string, text = fs.readFileSync(file, "utf8")): { spec: string; line: number; typeOnly: boolean }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: { spec: string; line: number; typeOnly: boolean }[] = [];
  const add = (lit: ts.Expression | ts.TypeNode, typeOnly: boolean) => {
    const node = ts.isLiteralTypeNode(lit as ts.TypeNode) ? (lit as ts.LiteralTypeNode).literal : lit;
    if (ts.isStringLiteral(node)) out.push({ spec: node.text, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, typeOnly });
  };
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n)) {
      const c = n.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      add(n.moduleSpecifier, !!c && (c.isTypeOnly || (!c.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly))));
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier) add(n.moduleSpecifier, n.isTypeOnly);
    else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference)) add(n.moduleReference.expression, n.isTypeOnly);
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0]) add(n.arguments[0], false);
    else if (ts.isImportTypeNode(n)) add(n.argument, true);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** a relative specifier resolved as the project's Bundler resolution does (exact file, .ts, /index.ts) */
function resolve(from: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  for (const c of [base, `${base}.ts`, path.join(base, "index.ts")]) if (fs.existsSync(c) && fs.statSync(c).isFile()) return c;
  return undefined;
}

/** the index in LAYERS of a file (relative to the source root, with "/"), or -1 */
export function layerOf(rel: string, layers: readonly (readonly string[])[] = LAYERS): number {
  return layers.findIndex((names) => names.some((n) => (n.endsWith(".ts") ? rel === n : rel.startsWith(`${n}/`))));
}

/** strongly connected components of more than one file (Tarjan), each as one cycle through it */
function cyclesOf(files: string[], edges: Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let i = 0;
  const connect = (v: string) => {
    index.set(v, i);
    low.set(v, i++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) components.push(c);
    }
  };
  for (const f of files) if (!index.has(f)) connect(f);
  // one readable cycle per component: walk inside it from its first file until a file repeats
  return components.map((c) => {
    const inside = new Set(c);
    const path: string[] = [];
    let at = [...c].sort()[0]!;
    while (!path.includes(at)) {
      path.push(at);
      at = next.get(at)!.find((w) => inside.has(w))!;
    }
    return path.slice(path.indexOf(at));
  });
}

/** the file a `@treasury/core/...` specifier names in the core package's sources under `coreSrc` (exports: "./<folder>" its index.ts, "./<folder>/*" *.ts) */
function resolvePackage(coreSrc: string, spec: string): string | undefined {
  if (spec !== CORE_NAME && !spec.startsWith(`${CORE_NAME}/`)) return undefined;
  const sub = spec.slice(CORE_NAME.length + 1);
  return resolve(path.join(coreSrc, "_"), `./${sub}`);
}

/**
 * The layering of the TypeScript sources under `root` (gateway/src, or packages/core/src with CORE_LAYERS).
 * `repo` is the repository's root; an import of `self` (a package's own name) from inside it counts as a
 * relative one.
 */
export function checkLayers(
  root: string,
  layers: readonly (readonly string[])[] = LAYERS,
  outsideAllowed: readonly string[] = OUTSIDE_ALLOWED,
  bypassRules: readonly { from: string; to: readonly string[]; why: string }[] = BYPASSES,
  repo: string = path.resolve(root, "..", ".."),
  self?: string,
): LayerReport {
  const where = path.relative(repo, root).split(path.sep).join("/");
  const rel = (f: string) => path.relative(root, f).split(path.sep).join("/");
  const files = listFiles(root).map(rel).sort();
  const edges: Edge[] = [];
  const climbs: string[] = [];
  const bypasses: string[] = [];
  const strays: string[] = [];
  const top = (f: string) => f.split("/")[0]!;
  for (const f of files) {
    const layer = layerOf(f, layers);
    if (layer < 0) strays.push(`${f}: in no layer (declare it in LAYERS, scripts/check-layers.ts)`);
    for (const imp of importsOf(path.join(root, f))) {
      const own = self !== undefined && (imp.spec === self || imp.spec.startsWith(`${self}/`));
      if (!imp.spec.startsWith(".") && !own) continue; // a package
      const target = own ? resolvePackage(root, imp.spec) : resolve(path.join(root, f), imp.spec);
      if (!target) continue; // the type checker reports it
      const to = rel(target);
      if (to.startsWith("..")) {
        const fromRepo = path.relative(repo, target).split(path.sep).join("/");
        if (!outsideAllowed.some((p) => fromRepo.startsWith(p)))
          strays.push(`${f}:${imp.line} imports ${fromRepo}, outside ${where}${outsideAllowed.length > 0 ? ` and ${outsideAllowed.join(", ")}` : ""}`);
        continue;
      }
      edges.push({ from: f, to, line: imp.line, typeOnly: imp.typeOnly });
      const toLayer = layerOf(to, layers);
      if (layer >= 0 && toLayer > layer) {
        climbs.push(`${f}:${imp.line} imports ${to}${imp.typeOnly ? " (types)" : ""}: ${layers[layer]!.join("+")} is below ${layers[toLayer]!.join("+")}`);
      }
      const rule = bypassRules.find((b) => b.from === top(f) && b.to.includes(top(to)));
      if (rule) bypasses.push(`${f}:${imp.line} imports ${to}: ${rule.why}`);
    }
  }
  return { files, edges, cycles: cyclesOf(files, edges), climbs, bypasses, strays };
}

/** imports of a banned package (PACKAGE_BANS) in the sources under `root` (gateway/src), each as "file:line imports package: why" */
export function checkPackages(root: string, bans: typeof PACKAGE_BANS = PACKAGE_BANS): string[] {
  const out: string[] = [];
  for (const file of listFiles(root).sort()) {
    const f = path.relative(root, file).split(path.sep).join("/");
    const apply = bans.filter((b) => b.from.some((p) => f.startsWith(p)) && !b.except?.includes(f));
    for (const imp of apply.length > 0 ? importsOf(file) : []) {
      for (const b of apply)
        if (b.packages.some((p) => imp.spec === p || imp.spec.startsWith(`${p}/`))) out.push(`${f}:${imp.line} imports ${imp.spec}: ${b.why}`);
    }
  }
  return out;
}

const CODE = /\.(ts|mts|cts|mjs|cjs|js)$/;

function listCode(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "node_modules" && !e.name.startsWith(".")) out.push(...listCode(p));
    } else if (CODE.test(e.name) && !e.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/**
 * Relative imports that cross a boundary (BOUNDARIES) anywhere in the repository `repo`, tests included, each as
 * "file:line imports target: why". (By name, only the core package can be imported, and every side may.)
 */
export function checkBoundaries(repo: string, rules: readonly { from: readonly string[]; to: readonly string[]; why: string }[] = BOUNDARIES): string[] {
  const fromRepo = (f: string) => path.relative(repo, f).split(path.sep).join("/");
  const out: string[] = [];
  const tops = [...new Set(rules.flatMap((r) => r.from.map((p) => p.split("/")[0]!)))];
  for (const file of tops.flatMap((t) => listCode(path.join(repo, t))).sort()) {
    const f = fromRepo(file);
    const apply = rules.filter((r) => r.from.some((p) => f.startsWith(p)));
    if (apply.length === 0) continue;
    for (const imp of importsOf(file)) {
      if (!imp.spec.startsWith(".")) continue;
      const target = resolve(file, imp.spec);
      if (!target) continue;
      const to = fromRepo(target);
      for (const r of apply) if (r.to.some((p) => to.startsWith(p))) out.push(`${f}:${imp.line} imports ${to}: ${r.why}`);
    }
  }
  return out;
}

function main(): void {
  const given = process.argv.includes("--root") ? process.argv[process.argv.indexOf("--root") + 1] : undefined;
  const root = path.resolve(given ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "gateway", "src"));
  const repo = path.resolve(root, "..", "..");
  const quiet = process.argv.includes("--quiet");
  let bad = 0;
  const parts: { name: string; root: string; layers: readonly (readonly string[])[]; run: () => LayerReport }[] = [
    {
      name: CORE_SRC,
      root: path.join(repo, CORE_SRC),
      layers: CORE_LAYERS,
      run: () => checkLayers(path.join(repo, CORE_SRC), CORE_LAYERS, [], [], repo, CORE_NAME),
    },
    { name: "gateway/src", root, layers: LAYERS, run: () => checkLayers(root) },
  ];
  for (const part of parts) {
    if (!fs.existsSync(part.root)) continue;
    const r = part.run();
    for (const c of r.cycles) console.error(`import cycle: ${part.name}: ${[...c, c[0]].join(" -> ")}`);
    for (const c of r.climbs) console.error(`upward import: ${part.name}/${c}`);
    for (const b of r.bypasses) console.error(`import past services: ${part.name}/${b}`);
    for (const s of r.strays) console.error(`layering: ${part.name}/${s}`);
    const n = r.cycles.length + r.climbs.length + r.bypasses.length + r.strays.length;
    bad += n;
    if (!quiet || n > 0) {
      console.log(
        `${part.name} layers (${part.layers.map((l) => l.join("+")).join(" < ")}): ${r.files.length} files, ${r.edges.length} imports, ${r.cycles.length} cycles, ${r.climbs.length} upward imports, ${r.bypasses.length} past services, ${r.strays.length} outside the layers`,
      );
    }
  }
  const banned = checkPackages(root);
  for (const b of banned) console.error(`banned package: gateway/src/${b}`);
  bad += banned.length;
  if (!quiet || banned.length > 0)
    console.log(`banned packages (${PACKAGE_BANS.map((b) => `${b.from.join(",")} -/-> ${b.packages.join(",")}`).join("; ")}): ${banned.length} imports`);
  const crossed = checkBoundaries(repo);
  for (const c of crossed) console.error(`boundary: ${c}`);
  bad += crossed.length;
  if (!quiet || crossed.length > 0)
    console.log(`boundaries (${BOUNDARIES.map((b) => `${b.from.join(",")} -/-> ${b.to.join(",")}`).join("; ")}): ${crossed.length} crossed`);
  if (bad > 0) process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
