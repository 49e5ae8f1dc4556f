// Type-aware checks for the promise mistakes the type checker lets through (the store is async):
// a floating promise (a claim never awaited), a promise where a value belongs (if (store.claim())), await of a non-promise.
// `npm run lint` then runs scripts/check-layers.ts: packages/core/src and gateway/src import only down their declared
// layer orders, with no import cycle, type imports included (import/no-cycle skips those); the core package imports
// neither the gateway nor the signer agent, and the signer agent reaches the gateway's code only through @treasury/core.
import tseslint from "typescript-eslint";

export default tseslint.config({
  files: ["packages/*/src/**/*.ts", "gateway/src/**/*.ts", "signer-agent/**/*.ts", "scripts/**/*.ts", "bench/**/*.ts"],
  ignores: ["**/*.test.ts", ".stryker-tmp/**"],
  languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  plugins: { "@typescript-eslint": tseslint.plugin },
  rules: {
    "@typescript-eslint/no-floating-promises": "error",
    "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
    "@typescript-eslint/await-thenable": "error",
  },
});
