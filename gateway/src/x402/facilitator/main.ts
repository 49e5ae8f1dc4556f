/**
 * The local facilitator as its own process (it holds the settlement keys; the
 * gateway holds none). FACILITATOR_RPC_URL: the Base Sepolia RPC (local chain
 * 84532); FACILITATOR_PRIVATE_KEY: the settlement account of `exact`;
 * FACILITATOR_SESSION_PRIVATE_KEY and FACILITATOR_AUTHORIZER_PRIVATE_KEY: the
 * account that sends sessions' deposits, claims and settlements, and the
 * receiver authorizer that signs their claims (`batch-settlement`, offered
 * when both are set); FACILITATOR_UPTO_PRIVATE_KEY: the settlement account of
 * `upto`; FACILITATOR_API_KEY: when set, every call must carry it as a bearer
 * token (the gateway's X402_FACILITATOR_API_KEY); FACILITATOR_PORT (default
 * 4021), FACILITATOR_HOST (default 127.0.0.1).
 * Each scheme sends with its own key, so their nonces never collide.
 */
import type { Hex } from "viem";
import { createBatchSettlementFacilitator } from "./batch-settlement";
import { LocalFacilitator } from "./local-facilitator";
import { facilitatorApp } from "./server";
import { createUptoFacilitator } from "./upto";

export interface FacilitatorKeys {
  /** `exact`'s settlement account */
  privateKey: Hex;
  /** sessions (`batch-settlement`): the sending account and the receiver authorizer */
  session?: { privateKey: Hex; authorizerKey: Hex };
  /** `upto`'s settlement account */
  uptoKey?: Hex;
}

export async function startFacilitator(opts: FacilitatorKeys & { rpcUrl: string; port: number; host?: string; apiKey?: string }) {
  const schemes = {
    ...(opts.session
      ? {
          batch: createBatchSettlementFacilitator({
            rpcUrl: opts.rpcUrl,
            privateKey: opts.session.privateKey,
            receiverAuthorizerKey: opts.session.authorizerKey,
          }),
        }
      : {}),
    ...(opts.uptoKey ? { upto: createUptoFacilitator({ rpcUrl: opts.rpcUrl, privateKey: opts.uptoKey }) } : {}),
  };
  const facilitator = new LocalFacilitator({ rpcUrl: opts.rpcUrl, privateKey: opts.privateKey, schemes });
  const app = facilitatorApp(facilitator, { apiKey: opts.apiKey });
  const server = await new Promise<import("node:http").Server>((resolve) => {
    const s = app.listen(opts.port, opts.host ?? "127.0.0.1", () => resolve(s));
  });
  const port = (server.address() as import("node:net").AddressInfo).port;
  return {
    url: `http://${opts.host ?? "127.0.0.1"}:${port}`,
    facilitator,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// run as a program: by path (tsx), or from the stack's bundle (FACILITATOR_RUN_MAIN=1, scripts/stack-build.ts)
const isMain = process.env.FACILITATOR_RUN_MAIN === "1" || (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\/gateway\//, "gateway/")));
if (isMain) {
  const rpcUrl = process.env.FACILITATOR_RPC_URL;
  const privateKey = process.env.FACILITATOR_PRIVATE_KEY as Hex | undefined;
  if (!rpcUrl || !privateKey) {
    process.stderr.write("FACILITATOR_RPC_URL and FACILITATOR_PRIVATE_KEY are required\n");
    process.exit(2);
  }
  const sessionKey = process.env.FACILITATOR_SESSION_PRIVATE_KEY as Hex | undefined;
  const authorizerKey = process.env.FACILITATOR_AUTHORIZER_PRIVATE_KEY as Hex | undefined;
  const uptoKey = process.env.FACILITATOR_UPTO_PRIVATE_KEY as Hex | undefined;
  void startFacilitator({
    rpcUrl,
    privateKey,
    ...(sessionKey && authorizerKey ? { session: { privateKey: sessionKey, authorizerKey } } : {}),
    ...(uptoKey ? { uptoKey } : {}),
    ...(process.env.FACILITATOR_API_KEY ? { apiKey: process.env.FACILITATOR_API_KEY } : {}),
    port: Number(process.env.FACILITATOR_PORT ?? 4021),
    host: process.env.FACILITATOR_HOST,
  }).then((f) => {
    process.stdout.write(`${JSON.stringify({ msg: "facilitator listening", url: f.url, settlement_account: f.facilitator.address })}\n`);
    const stop = () => void f.close().then(() => process.exit(0));
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}
