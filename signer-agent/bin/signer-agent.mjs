#!/usr/bin/env node
// npx signer-agent ...: runs the TypeScript CLI through tsx.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli.ts");
process.exitCode = await main(process.argv.slice(2));
