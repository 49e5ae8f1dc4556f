/** The import rules `npm run lint` checks (scripts/check-layers.ts): it finds a climb, a cycle through types, a bypass, a stray and a crossed boundary; the repository has none. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkBoundaries, checkLayers, checkPackages, CORE_LAYERS, CORE_NAME, layerOf, LAYERS } from "../../scripts/check-layers";

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
    expect(layerOf("lib/clock.ts")).toBe(0);
    expect(layerOf("lib/errors.ts", CORE_LAYERS)).toBe(0);
    expect(layerOf("contracts/chains.ts", CORE_LAYERS)).toBeLessThan(layerOf("domain/money.ts", CORE_LAYERS));
    expect(layerOf("schemas/common.ts", CORE_LAYERS)).toBe(layerOf("actions/index.ts", CORE_LAYERS));
    expect(layerOf("actions/index.ts")).toBe(-1);
    expect(layerOf("store/db.ts")).toBeLessThan(layerOf("services/context.ts"));
    expect(layerOf("config.ts")).toBeLessThan(layerOf("x402/payment-gate.ts"));
    expect(layerOf("main.ts")).toBe(LAYERS.length - 1);
    expect(layerOf("elsewhere/x.ts")).toBe(-1);
  });

  it("reports an upward import, a cycle through type imports, a route reaching the store, a file of no layer and a relative import out of gateway/src", () => {
    const root = tree({
      "gateway/src/lib/clock.ts": `import type { Ctx } from "../services/context";\nexport type Clock = { ctx?: Ctx };\n`,
      "gateway/src/services/context.ts": `export interface Ctx { n: number }\n`,
      "gateway/src/store/db.ts": `import { open } from "./open";\nexport interface Db { open: typeof open }\n`,
      "gateway/src/store/open.ts": `import type { Db } from "./db";\nexport const open = (db?: Db) => db;\n`,
      "gateway/src/routes/console.ts": `export { open } from "../store/open";\nimport "../services/context";\n`,
      "gateway/src/stray/x.ts": `export const x = 1;\n`,
      "gateway/src/lib/secrets.ts": `import { secret } from "../../../test/helpers/secret";\nimport { CHAINS } from "../../../packages/core/src/contracts/chains";\nimport { money } from "@treasury/core/domain/money";\nexport const y = [secret, CHAINS, money];\n`,
      "gateway/src/lib/secrets.test.ts": `import "../services/context";\n`,
      "test/helpers/secret.ts": `export const secret = 1;\n`,
      "packages/core/src/contracts/chains.ts": `export const CHAINS = [];\n`,
    });
    const r = checkLayers(root);
    expect(r.files).not.toContain("lib/secrets.test.ts");
    expect(r.climbs).toEqual(["lib/clock.ts:1 imports services/context.ts (types): lib is below services"]);
    expect(r.cycles).toEqual([["store/db.ts", "store/open.ts"]]);
    expect(r.bypasses).toEqual(["routes/console.ts:1 imports store/open.ts: routes call services"]);
    expect(r.strays).toEqual([
      "lib/secrets.ts:1 imports test/helpers/secret.ts, outside gateway/src",
      "lib/secrets.ts:2 imports packages/core/src/contracts/chains.ts, outside gateway/src",
      "stray/x.ts: in no layer (declare it in LAYERS, scripts/check-layers.ts)",
    ]);
  });

  it("reports the HTTP framework imported by the payment gate or a service (types too), not by the HTTP layer, a test or the facilitator's own server", () => {
    const root = tree({
      "gateway/src/x402/gate.ts": `import type { Request } from "express";\nexport type R = Request;\n`,
      "gateway/src/x402/challenge.ts": `import { paymentMiddleware } from "x402-express";\nexport const m = paymentMiddleware;\n`,
      "gateway/src/services/auth.ts": `import express from "express";\nexport const e = express;\n`,
      "gateway/src/x402/facilitator/server.ts": `import express from "express";\nexport const app = express();\n`,
      "gateway/src/x402/gate.test.ts": `import express from "express";\n`,
      "gateway/src/http/stage.ts": `import type { Response } from "express";\nexport type S = Response;\n`,
    });
    const why = "no HTTP framework below the HTTP layer: the gate returns an outcome, the HTTP stage writes it";
    expect(checkPackages(root)).toEqual([
      `services/auth.ts:1 imports express: ${why}`,
      `x402/challenge.ts:1 imports x402-express: ${why}`,
      `x402/gate.ts:1 imports express: ${why}`,
    ]);
    // the repository has none
    expect(checkPackages(path.resolve("gateway", "src"))).toEqual([]);
  });

  it("the core package below both sides: a core file importing the gateway or the signer agent (a test too), a signer-agent file importing gateway/src, a relative path into packages/core, a climb inside the core package (by its own name too)", () => {
    const root = tree({
      "packages/core/src/domain/money.ts": `import { x } from "../../../../gateway/src/lib/clock";\nimport { y } from "../chain/reads";\nexport const money = [x, y];\n`,
      "packages/core/src/chain/reads.ts": `export const y = 1;\n`,
      "packages/core/src/actions/index.ts": `import { y } from "@treasury/core/chain/reads";\nexport const declarationOf = y;\n`,
      "packages/core/src/actions/exit.test.ts": `import { checkStep } from "../../../../signer-agent/src/policy";\nimport { refusalOf } from "../../../../test/helpers/refusal";\n`,
      "packages/core/src/contracts/chains.ts": `export const CHAINS = [];\n`,
      "gateway/src/lib/clock.ts": `export const x = 1;\n`,
      "gateway/src/actions/index.ts": `export const declarationOf = 1;\n`,
      "signer-agent/src/policy.ts": `import { declarationOf } from "../../gateway/src/actions";\nimport { money } from "@treasury/core/domain/money";\nimport { CHAINS } from "../../packages/core/src/contracts/chains";\nexport const checkStep = [declarationOf, money, CHAINS];\n`,
      "test/helpers/refusal.ts": `export const refusalOf = 1;\n`,
    });
    const repo = path.resolve(root, "..", "..");
    expect(checkBoundaries(repo)).toEqual([
      "packages/core/src/actions/exit.test.ts:1 imports signer-agent/src/policy.ts: the core package is below the gateway and the signer agent",
      "packages/core/src/domain/money.ts:1 imports gateway/src/lib/clock.ts: the core package is below the gateway and the signer agent",
      "signer-agent/src/policy.ts:1 imports gateway/src/actions/index.ts: the signer agent shares the gateway's code through @treasury/core only",
      "signer-agent/src/policy.ts:3 imports packages/core/src/contracts/chains.ts: the core package is imported by name (@treasury/core/...)",
    ]);
    const core = checkLayers(path.join(repo, "packages", "core", "src"), CORE_LAYERS, [], [], repo, CORE_NAME);
    expect(core.climbs).toEqual([
      "actions/index.ts:1 imports chain/reads.ts: schemas+actions is below chain",
      "domain/money.ts:2 imports chain/reads.ts: domain is below chain",
    ]);
    expect(core.strays).toEqual(["domain/money.ts:1 imports gateway/src/lib/clock.ts, outside packages/core/src"]);
  });

  it("the repository's own sources: no cycle, no upward import, no route past its services, no boundary crossed", () => {
    const repo = path.resolve(import.meta.dirname, "..", "..");
    const core = checkLayers(path.join(repo, "packages", "core", "src"), CORE_LAYERS, [], [], repo, CORE_NAME);
    expect({ cycles: core.cycles, climbs: core.climbs, strays: core.strays }).toEqual({ cycles: [], climbs: [], strays: [] });
    expect(core.files.length).toBeGreaterThan(40);
    expect(checkBoundaries(repo)).toEqual([]);
    const r = checkLayers(path.join(repo, "gateway", "src"));
    expect({ cycles: r.cycles, climbs: r.climbs, bypasses: r.bypasses, strays: r.strays }).toEqual({ cycles: [], climbs: [], bypasses: [], strays: [] });
    expect(r.files.length).toBeGreaterThan(100);
  });
});
