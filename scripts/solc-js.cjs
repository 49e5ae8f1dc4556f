#!/usr/bin/env node
// Forge's solc: answers --version like native solc, otherwise compiles standard JSON from stdin with
// solc-js (the npm `solc` package; no native solc exists for this machine) and writes standard JSON out.
const path = require("node:path");
const fs = require("node:fs");
const solc = require("solc");

const args = process.argv.slice(2);
if (args.includes("--version")) {
  process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${solc.version().replace(".Emscripten.clang", ".Linux.g++")}\n`);
  process.exit(0);
}
const allowPaths = [];
const baseIndex = args.indexOf("--base-path");
if (baseIndex >= 0) allowPaths.push(args[baseIndex + 1]);
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const findImports = (p) => {
    for (const root of [process.cwd(), ...allowPaths]) {
      const file = path.resolve(root, p);
      if (fs.existsSync(file)) return { contents: fs.readFileSync(file, "utf8") };
    }
    return { error: `not found: ${p}` };
  };
  process.stdout.write(solc.compile(input, { import: findImports }));
});
