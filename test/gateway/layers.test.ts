/** The import rule `npm run lint` checks (scripts/check-layers.ts): it finds a climb, a cycle through types, a bypass and a stray; the gateway has none. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkLayers, layerOf, LAYERS } from "../../scripts/check-layers";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** a repository of `files` (path from the repository root -> text); returns its gateway/src */
function tree(files: Record<string, string>): string {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "layers-"));
  made.push(repo);
  for (const [p, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(repo, p)), { recursive: true });
    fs.writeFileSync(path.join(repo, p), text);
  }
  return path.join(repo, "gateway", "src");
}

describe("scripts/check-layers.ts", () => {
  it("places files by directory or root file, lowest first", () => {
    expect(layerOf("lib/errors.ts")).toBe(0);
    expect(layerOf("schemas/common.ts")).toBe(layerOf("actions/index.ts"));
    expect(layerOf("store/db.ts")).toBeLessThan(layerOf("services/context.ts"));
    expect(layerOf("config.ts")).toBeLessThan(layerOf("x402/payment-gate.ts"));
    expect(layerOf("main.ts")).toBe(LAYERS.length - 1);
    expect(layerOf("elsewhere/x.ts")).toBe(-1);
  });

  it("reports an upward import, a cycle through type imports, a route reaching the store, a file of no layer and an import out of the repository's shared code", () => {
    const root = tree({
      "gateway/src/lib/clock.ts": `import type { Ctx } from "../services/context";\nexport type Clock = { ctx?: Ctx };\n`,
      "gateway/src/services/context.ts": `export interface Ctx { n: number }\n`,
      "gateway/src/store/db.ts": `import { open } from "./open";\nexport interface Db { open: typeof open }\n`,
      "gateway/src/store/open.ts": `import type { Db } from "./db";\nexport const open = (db?: Db) => db;\n`,
      "gateway/src/routes/console.ts": `export { open } from "../store/open";\nimport "../services/context";\n`,
      "gateway/src/stray/x.ts": `export const x = 1;\n`,
      "gateway/src/domain/money.ts": `import { secret } from "../../../test/helpers/secret";\nimport { CHAINS } from "../../../contracts-abi/chains";\nexport const y = [secret, CHAINS];\n`,
      "gateway/src/domain/money.test.ts": `import "../services/context";\n`,
      "test/helpers/secret.ts": `export const secret = 1;\n`,
      "contracts-abi/chains.ts": `export const CHAINS = [];\n`,
    });
    const r = checkLayers(root);
    expect(r.files).not.toContain("domain/money.test.ts");
    expect(r.climbs).toEqual(["lib/clock.ts:1 imports services/context.ts (types): lib is below services"]);
    expect(r.cycles).toEqual([["store/db.ts", "store/open.ts"]]);
    expect(r.bypasses).toEqual(["routes/console.ts:1 imports store/open.ts: routes call services"]);
    expect(r.strays).toEqual([
      "domain/money.ts:1 imports test/helpers/secret.ts, outside gateway/src and contracts-abi/",
      "stray/x.ts: in no layer (declare it in LAYERS, scripts/check-layers.ts)",
    ]);
  });

  it("the gateway's own sources: no cycle, no upward import, no route past its services", () => {
    const r = checkLayers(path.resolve(import.meta.dirname, "..", "..", "gateway", "src"));
    expect({ cycles: r.cycles, climbs: r.climbs, bypasses: r.bypasses, strays: r.strays }).toEqual({ cycles: [], climbs: [], bypasses: [], strays: [] });
    expect(r.files.length).toBeGreaterThan(100);
  });
});
