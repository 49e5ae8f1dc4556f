/**
 * The console at /console: a page, its stylesheet, and its script bundled by
 * esbuild from console/app.ts on first request (with viem, from the local
 * install: nothing is fetched from a CDN), kept in memory afterwards.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Router } from "express";
import { exactRouter } from "../http/dispatcher";

const HERE = path.dirname(fileURLToPath(import.meta.url));

let bundle: Promise<string> | undefined;
/** the browser bundle of app.ts (built once per process) */
export function consoleScript(): Promise<string> {
  bundle ??= import("esbuild")
    .then(({ build }) =>
      build({
        entryPoints: [path.join(HERE, "app.ts")],
        bundle: true,
        write: false,
        format: "esm",
        platform: "browser",
        target: "es2020",
        minify: true,
        legalComments: "none",
        logLevel: "silent",
      }),
    )
    .then((r) => r.outputFiles[0]!.text);
  bundle.catch(() => (bundle = undefined));
  return bundle;
}

export function consoleRouter(): Router {
  const router = exactRouter();
  const page = fs.readFileSync(path.join(HERE, "index.html"), "utf8");
  const css = fs.readFileSync(path.join(HERE, "console.css"), "utf8");
  router.get(["/console", "/console/"], (_req, res) => {
    res.setHeader("Cache-Control", "no-store");
    res.type("html").send(page);
  });
  router.get("/console/console.css", (_req, res) => {
    res.type("css").send(css);
  });
  router.get("/console/app.js", async (_req, res, next) => {
    try {
      res.setHeader("Cache-Control", "no-cache");
      res.type("application/javascript").send(await consoleScript());
    } catch (err) {
      next(err);
    }
  });
  return router;
}
