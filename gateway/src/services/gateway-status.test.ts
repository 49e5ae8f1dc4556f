/** The status document's text written from parts is the document's own JSON.stringify, whatever the chains answer. */
import { describe, expect, it } from "vitest";
import { gatewayStatusDocument, gatewayStatusWriter, type ChainExecution } from "./gateway-status";

const startedAt = new Date("2026-11-25T00:00:00.000Z");
const POOL = "0xA238Dd80C259a72e81d7e4664a9801593F98d1c5" as const;
const none = { aave: null };
const answers: ChainExecution[][] = [
  [
    { chain: "base", execution: "simulated", network: "none", sandbox_funding: false, ...none },
    { chain: "arbitrum", execution: "simulated", network: "none", sandbox_funding: false, ...none },
  ],
  [
    { chain: "base", execution: "broadcast", network: "local_sandbox_chain", sandbox_funding: true, aave: { pool: POOL, pool_revision: 10, version: "3.6" } },
    { chain: "arbitrum", execution: "simulated", network: "none", sandbox_funding: false, ...none },
  ],
  [
    { chain: "base", execution: "broadcast", network: "live", sandbox_funding: false, aave: { pool: POOL, pool_revision: 11, version: null } },
    { chain: "arbitrum", execution: "broadcast", network: "test_network", sandbox_funding: false, aave: { pool: POOL, pool_revision: null, version: null } },
  ],
  // the same chains, the Pool upgraded: only its revision and version move
  [
    { chain: "base", execution: "broadcast", network: "live", sandbox_funding: false, aave: { pool: POOL, pool_revision: 10, version: "3.6" } },
    { chain: "arbitrum", execution: "broadcast", network: "test_network", sandbox_funding: false, aave: { pool: POOL, pool_revision: null, version: null } },
  ],
];

describe("gatewayStatusWriter", () => {
  it("writes what JSON.stringify of the document writes, as the clock and the chains' answers move", async () => {
    let now = startedAt;
    let chains = answers[0]!;
    const deps = { clock: { now: () => now }, ping: async () => ({ one: 1 }), chains: async () => chains };
    const write = gatewayStatusWriter(deps, startedAt, '0.1.0-"quoted"');
    for (const [i, ms] of [0, 999, 1_000, 59_999, 86_400_123, 3_600_000_007, 3_600_000_008, 3_600_000_009].entries()) {
      now = new Date(startedAt.getTime() + ms);
      chains = answers[i % answers.length]!;
      const text = await write();
      expect(text).toBe(JSON.stringify(await gatewayStatusDocument(deps, startedAt, '0.1.0-"quoted"')));
      expect(JSON.parse(text)).toMatchObject({ uptime_seconds: Math.floor(ms / 1000), time: now.toISOString(), chains });
    }
  });

  it("asks the store to answer on every call: a store that fails fails the status", async () => {
    let fail = false;
    const write = gatewayStatusWriter(
      {
        clock: { now: () => startedAt },
        ping: async () => {
          if (fail) throw new Error("store down");
        },
        chains: async () => answers[0]!,
      },
      startedAt,
      "0.1.0",
    );
    await write();
    fail = true;
    await expect(write()).rejects.toThrow("store down");
  });
});
