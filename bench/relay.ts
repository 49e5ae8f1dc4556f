/** The relay without a chain (verify + persist on the sandbox ledger), many treasuries at once; profiled with --profile. */
import fs from "node:fs";
import path from "node:path";
import { CONNECTIONS, PROFILE, QUICK, RESULTS } from "./args";
import { load, type LoadFigures } from "./http-load";
import { startGatewayProcess } from "./processes";
import { hotSpots } from "./profile";
import { dir, json, keep } from "./session";

export /** relay verify + persist (no chain: the sandbox ledger), many treasuries at once */
async function relayNoBroadcast(): Promise<LoadFigures & { profile?: ReturnType<typeof hotSpots> }> {
  const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
  const profDir = fs.mkdtempSync(path.join(dir, "prof-"));
  const gw = keep(await startGatewayProcess(dir, {}, PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : []));
  const n = QUICK ? 60 : 600;
  const prepared = await Promise.all(
    Array.from({ length: n }, async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const t = await json(`${gw.url}/api/v1/treasuries`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ wallet_address: account.address }),
      });
      const env = await json(`${gw.url}/api/v1/deposits`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${t.api_key}`, "idempotency-key": `bench-relay-${account.address}` },
        body: JSON.stringify({ amount_usdc: 1000 }),
      });
      if (!Array.isArray(env.steps)) throw new Error(`the relay's deposit did not answer an envelope: ${JSON.stringify(env)}`);
      const step = env.steps[0];
      const u = step.unsigned_transaction;
      const signed = await account.signTransaction({
        type: "eip1559",
        chainId: u.chain_id,
        nonce: 0,
        to: u.to,
        data: u.data,
        value: BigInt(u.value),
        gas: 300_000n,
        maxFeePerGas: 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
      });
      return JSON.stringify({ tx_id: step.tx_id, signed_transaction: signed });
    }),
  );
  const skipMs = performance.now() - gw.spawnedAt;
  const r = await load(
    "POST /api/v1/relay (verify + persist, no broadcast)",
    { url: `${gw.url}/api/v1/relay`, body: (i) => prepared[i]!, headersOf: (i) => ({ "idempotency-key": `bench-relay-step-${i}` }) },
    { connections: CONNECTIONS, count: n },
  );
  await gw.stop();
  const file = fs.readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) return r;
  const profile = hotSpots(path.join(profDir, file), skipMs);
  fs.writeFileSync(path.join(RESULTS, "profiles", "POST_api_v1_relay.json"), JSON.stringify(profile, null, 2));
  return { ...r, profile };
}
