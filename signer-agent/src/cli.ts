/**
 * signer-agent: sign treasury envelopes with a local key.
 *
 *   signer-agent init [--fee-recipient 0x...]      create an encrypted keystore and a default policy
 *   signer-agent address                           print the wallet address
 *   signer-agent balance                           ETH, USDC and the Aave position on the fork
 *   signer-agent run <action> <amount> [--target btc|eth] [--bearer sk_...]   (actions: the gateway's declarations)
 *   signer-agent serve [--port 4030]               loopback signing endpoint (SIGNER_SERVE_TOKEN)
 *   signer-agent where [gateway|rpc|x402-rpc|facilitator]   a URL of the running local stack (its file), else the default
 *   signer-agent operator <create-safe|fund <weth> [--borrow <usdc>]|register|approve [--protect-below 1.4]|revoke|propose <action> <usdc>|queue|sign [stx_id] [--wait]|status>
 *                                                   the operator's managed treasury on a Safe (SIGNER_DIR defaults to .data/operator)
 *
 * Environment: SIGNER_DIR (./.data/agent), SIGNER_KEYSTORE, SIGNER_PASSPHRASE (else a prompt),
 * SIGNER_POLICY, SIGNER_AUDIT_LOG, SIGNER_GATEWAY_URL (http://127.0.0.1:4020),
 * SIGNER_RPC_URL (the fork, http://127.0.0.1:8545), SIGNER_X402_RPC_URL (http://127.0.0.1:8546),
 * SIGNER_BEARER_KEY. A raw key only with --dev-raw-key (and SIGNER_DEV_PRIVATE_KEY).
 * While `npm start` runs, the defaults are the stack's own (its file, stack-file.ts: STACK_FILE or
 * .data/stack.json): its gateway, chains and the demo agent's and operator's directories.
 */
import fs from "node:fs";
import path from "node:path";
import { createPublicClient, formatEther } from "viem";
import { rpcHttp } from "../../gateway/src/chain/rpc-transport";
import { randomBytes } from "node:crypto";
import { DECLARED, declarationOf, TREASURY_ACTIONS, type TreasuryAction } from "../../gateway/src/actions";
import { RefusedError, SignerAgent } from "./agent";
import { AuditLog } from "./audit-log";
import { agentConfig } from "./config";
import { createKeystore, keystoreAddress, loadKey, promptPassphrase } from "./keystore";
import { defaultPolicy, loadPolicy } from "./policy";
import { serveAgent } from "./serve";
import { readStackFile } from "./stack-file";

function parseArgs(argv: string[]) {
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("--")) {
      const [k, v] = a.slice(2).split("=", 2) as [string, string | undefined];
      if (v !== undefined) flags[k] = v;
      else if (argv[i + 1] && !argv[i + 1]!.startsWith("--") && !["dev-raw-key", "json"].includes(k)) flags[k] = argv[++i]!;
      else flags[k] = true;
    } else positional.push(a);
  }
  return { positional, flags };
}

const out = (line: string) => process.stdout.write(`${line}\n`);

async function agentFrom(cfg: ReturnType<typeof agentConfig>) {
  const privateKey = await loadKey({ keystore: cfg.keystore, passphrase: cfg.passphrase, rawKey: cfg.devRawKey, allowRawKey: Boolean(cfg.devRawKey) });
  if (!fs.existsSync(cfg.policy)) throw new Error(`no policy at ${cfg.policy}; run: signer-agent init`);
  return new SignerAgent({
    privateKey,
    gatewayUrl: cfg.gatewayUrl,
    rpcUrl: cfg.rpcUrl,
    x402RpcUrl: cfg.x402RpcUrl,
    policy: loadPolicy(cfg.policy),
    audit: new AuditLog(cfg.auditLog),
    bearer: cfg.bearer,
    progress: out,
  });
}

/** the operator's managed treasury: a Safe it owns, registered, with delegation approved or revoked */
async function operatorCommand(rest: string[], flags: Record<string, string | boolean>): Promise<number> {
  const cfg = agentConfig({ dir: (flags.dir as string) ?? process.env.OPERATOR_DIR ?? readStackFile()?.operator.dir ?? "./.data/operator", ...flags });
  const stateFile = path.join(path.dirname(cfg.keystore), "operator.json");
  const state = (fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, "utf8")) : {}) as { safe?: `0x${string}`; api_key?: string; treasury_id?: string; module?: `0x${string}` };
  const save = () => fs.writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  const privateKey = await loadKey({ keystore: cfg.keystore, passphrase: cfg.passphrase, rawKey: cfg.devRawKey, allowRawKey: Boolean(cfg.devRawKey) });
  const { Operator } = await import("./operator");
  const operator = new Operator({ privateKey, rpcUrl: cfg.rpcUrl });
  if (state.safe) await operator.connect(state.safe);
  const gateway = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${cfg.gatewayUrl}${p}`, {
      method,
      headers: { "content-type": "application/json", ...(state.api_key ? { authorization: `Bearer ${state.api_key}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, any>;
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${json.error}: ${json.message}${json.reason ? ` (${json.reason})` : ""}`);
    return json;
  };
  /** the service a signed statement names: the gateway's public base URL, as it states it */
  const serviceName = async (): Promise<string> =>
    (await gateway("GET", `/api/v1/treasuries/ownership-statement?wallet_address=${state.safe ?? "0x0000000000000000000000000000000000000001"}&execution_mode=managed`)).typed_data.message.service;
  const [sub, arg] = rest;
  switch (sub) {
    case "create-safe":
      state.safe = await operator.createSafe();
      save();
      out(`Safe ${state.safe} created, owned by ${operator.account.address} (threshold 1)`);
      return 0;
    case "fund": {
      if (!state.safe) throw new Error("no Safe yet: signer-agent operator create-safe");
      const weth = Number(arg ?? "1");
      const wei = BigInt(Math.round(weth * 1e6)) * 10n ** 12n;
      await operator.fundWeth(wei);
      const borrow = flags.borrow ? BigInt(Math.round(Number(flags.borrow) * 1e6)) : 0n;
      await operator.supplyAndBorrow(wei, borrow);
      out(`supplied ${weth} WETH${borrow ? ` and borrowed ${Number(borrow) / 1e6} USDC` : ""} through the Safe`);
      return 0;
    }
    case "register": {
      if (!state.safe) throw new Error("no Safe yet: signer-agent operator create-safe");
      // the Safe proves it stands behind the registration (EIP-1271 through the operator's signature),
      // naming the service as the gateway names itself
      const service = await serviceName();
      const ownership_proof = await operator.ownershipProof(service, "managed");
      const t = await gateway("POST", "/api/v1/treasuries", { wallet_address: state.safe, execution_mode: "managed", ownership_proof });
      state.api_key = t.api_key;
      state.treasury_id = t.treasury_id;
      save();
      out(`managed treasury ${t.treasury_id} registered; its key is kept in ${stateFile}`);
      return 0;
    }
    case "approve": {
      const d = await gateway("GET", "/api/v1/delegation");
      if (!d.requirements.automation) throw new Error("the gateway has no automation address configured");
      // --upgrade: a module of this build replaces the one in force, which keeps protecting until the Safe enables the new one
      const upgrade = Boolean(flags.upgrade) && Boolean(d.module);
      if (upgrade) state.module = await operator.deployModule(d.requirements.automation, d.requirements.park_target_bps);
      state.module = state.module ?? (await operator.deployModule(d.requirements.automation, d.requirements.park_target_bps));
      save();
      const protectBelow = flags["protect-below"] ? Number(flags["protect-below"]) : Number(d.protect_below_health_score);
      // the Safe signs what it delegates: this treasury, this module, these thresholds
      const safe_proof = await operator.delegationProof({ service: await serviceName(), treasuryId: state.treasury_id!, module: state.module!, protectBelowHealth: protectBelow, parkTargetBps: d.requirements.park_target_bps, maxSlippageBps: d.requirements.max_slippage_bps });
      await gateway("POST", "/api/v1/delegation", { module: state.module, protect_below_health_score: protectBelow, safe_proof });
      if (upgrade) {
        // one Safe transaction the gateway prepares: enableModule of the new module, disableModule of the old one
        const prepared = await gateway("GET", "/api/v1/delegation/safe-transaction?change=upgrade");
        const hash = await operator.executeUpgrade(prepared as never, state.module!);
        out(`delegation upgraded: module ${prepared.module} enabled, ${prepared.replaces} disabled, in one Safe transaction (${hash})`);
        out(JSON.stringify(await gateway("GET", "/api/v1/delegation"), null, 2));
        return 0;
      }
      const hash = await operator.approveDelegation(state.module);
      out(`delegation approved: module ${state.module} enabled on the Safe (${hash})`);
      out(JSON.stringify(await gateway("GET", "/api/v1/delegation"), null, 2));
      return 0;
    }
    case "revoke": {
      if (!state.module) throw new Error("no module to revoke");
      const hash = await operator.revokeDelegation(state.module);
      await operator.publicClient.waitForTransactionReceipt({ hash });
      out(`delegation revoked: module ${state.module} disabled (${hash}); already-submitted actions may still settle`);
      return 0;
    }
    case "propose": {
      // a managed action through the Safe: the gateway answers its receipt and queues one Safe transaction for the owners
      const [, action, amount] = rest;
      if (!isTreasuryAction(action) || !amount) throw new Error(`usage: signer-agent operator propose <${TREASURY_ACTIONS.join("|")}> <amount_usdc> [--target btc|eth]`);
      const d = declarationOf(action);
      const res = await fetch(`${cfg.gatewayUrl}${d.route.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${state.api_key}`, "idempotency-key": `op-${Date.now()}-${Math.random().toString(36).slice(2)}` },
        body: JSON.stringify(d.cli.body(Number(amount), flags)),
      });
      const receipt = (await res.json()) as Record<string, any>;
      if (!res.ok) throw new Error(`${action}: ${res.status} ${receipt.error}: ${receipt.message}`);
      out(`${action} ${amount} USDC: receipt ${receipt[d.receiptId]} ${receipt.status}; Safe transaction ${receipt.safe_transaction?.id ?? "(none)"} awaits the owners (signer-agent operator sign)`);
      return 0;
    }
    case "queue": {
      // the managed actions waiting for the Safe's owners
      const { data } = await gateway("GET", "/api/v1/safe-transactions");
      for (const q of data) out(`${q.id} ${q.action} ${q.amount_usdc} USDC (fee ${q.fee_usdc}) ${q.status}: ${q.signatures.length} of ${q.confirmations_required ?? "?"} signed; ${q.calls.length} calls; hash ${q.safe_tx_hash}`);
      if (data.length === 0) out("no Safe transaction awaits the owners");
      return 0;
    }
    case "sign": {
      // sign every open one (or the one named), each checked first against the Safe itself (Operator.signQueued)
      const { data } = await gateway("GET", "/api/v1/safe-transactions");
      const chosen = (data as { id: string; status: string }[]).filter((q) => q.status === "awaiting_signatures" && (!arg || q.id === arg));
      if (chosen.length === 0) out(arg ? `no open Safe transaction ${arg}` : "no Safe transaction awaits the owners");
      for (const q of chosen) {
        const signature = await operator.signQueued(q as never);
        const signed = await gateway("POST", `/api/v1/safe-transactions/${q.id}/signatures`, { signature });
        out(`signed ${q.id} (${signed.action} ${signed.amount_usdc} USDC): ${signed.signatures.length} of ${signed.confirmations_required} owners; the service executes it once the threshold is reached`);
        if (!flags.wait) continue;
        // --wait: until the service's executor has executed it (or refused it), at most a minute
        for (let i = 0; i < 600; i++) {
          const now = await gateway("GET", `/api/v1/safe-transactions/${q.id}`);
          if (now.status === "executed") {
            out(`executed ${q.id} in ${now.tx_hash}; receipt ${now.receipt_id} completed`);
            break;
          }
          if (now.status === "failed" || now.status === "expired") throw new Error(`${q.id} ${now.status}: ${now.failure?.error}: ${now.failure?.message}`);
          if (i === 599) throw new Error(`${q.id} not executed within a minute (is the protection process running?)`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      return 0;
    }
    case "status":
      out(JSON.stringify(await gateway("GET", "/api/v1/delegation"), null, 2));
      out(JSON.stringify(await gateway("GET", "/api/v1/health"), null, 2));
      return 0;
    default:
      out("usage: signer-agent operator <create-safe|fund <weth> [--borrow <usdc>]|register|approve|revoke|propose <action> <usdc>|queue|sign [stx_id] [--wait]|status>");
      return 2;
  }
}

export async function main(argv: string[]): Promise<number> {
  const { positional, flags } = parseArgs(argv);
  const cfg = agentConfig(flags);
  const [command, ...rest] = positional;
  try {
    switch (command) {
      case "init": {
        const passphrase = cfg.passphrase ?? (await promptPassphrase("new keystore passphrase: "));
        if (passphrase.length < 8) throw new Error("choose a passphrase of at least 8 characters");
        const address = await createKeystore(cfg.keystore, passphrase, cfg.devRawKey);
        if (!fs.existsSync(cfg.policy)) {
          const recipients = flags["fee-recipient"] ? [String(flags["fee-recipient"])] : ["0x000000000000000000000000000000000000fee5"];
          fs.mkdirSync(path.dirname(path.resolve(cfg.policy)), { recursive: true });
          fs.writeFileSync(cfg.policy, `${JSON.stringify(defaultPolicy(recipients), null, 2)}\n`);
        }
        out(`keystore ${cfg.keystore} for ${address}; policy ${cfg.policy}`);
        return 0;
      }
      case "address":
        out(cfg.devRawKey ? (await agentFrom(cfg)).address : keystoreAddress(cfg.keystore));
        return 0;
      case "balance": {
        const address = cfg.devRawKey ? (await agentFrom(cfg)).address : keystoreAddress(cfg.keystore);
        const client = createPublicClient({ transport: rpcHttp(cfg.rpcUrl) });
        out(`${address} on chain ${await client.getChainId()}: ${formatEther(await client.getBalance({ address }))} ETH`);
        const agent = await agentFrom(cfg);
        out(JSON.stringify(await agent.position(), null, 2));
        return 0;
      }
      case "run": {
        const [action, given] = rest;
        // an exit closes everything: it takes no amount
        const amount = action === "exit" ? (given ?? "0") : given;
        if (!isTreasuryAction(action) || !amount || Number.isNaN(Number(amount))) {
          throw new Error(`usage: signer-agent run <action> <amount> [--target btc|eth]; actions: ${DECLARED.map((d) => d.cli.usage).join("; ")}`);
        }
        const agent = await agentFrom(cfg);
        out(`agent ${agent.address}, paying with ${cfg.bearer ? "a bearer key" : "x402"}`);
        const result = await agent.run(action, Number(amount), flags);
        const last = result.receipts.at(-1)!;
        out(`done: ${action} ${amount} ${typeof flags.asset === "string" ? flags.asset.toUpperCase() : "USDC"}, resulting LTV ${last.result.resulting_ltv}%, tx ${last.tx_hash} (${last.simulated ? "simulated" : "confirmed on chain"})`);
        out(`on chain: ${JSON.stringify(result.onChain)}`);
        return 0;
      }
      case "operator":
        return await operatorCommand(rest, flags);
      case "where": {
        const stack = readStackFile();
        const what = rest[0] ?? "gateway";
        const urls: Record<string, string> = { gateway: cfg.gatewayUrl, rpc: cfg.rpcUrl, "x402-rpc": cfg.x402RpcUrl, facilitator: stack?.facilitator_url ?? "http://127.0.0.1:4021" };
        if (!urls[what]) throw new Error("usage: signer-agent where [gateway|rpc|x402-rpc|facilitator]");
        out(urls[what]!);
        return 0;
      }
      case "serve": {
        const token = cfg.serveToken ?? randomBytes(24).toString("base64url");
        const agent = await agentFrom(cfg);
        const port = Number(flags.port ?? 4030);
        await serveAgent(agent, { port, token });
        out(`signing endpoint on http://127.0.0.1:${port} for ${agent.address}${cfg.serveToken ? "" : `; token ${token}`}`);
        await new Promise(() => undefined);
        return 0;
      }
      default:
        out("usage: signer-agent <init|address|balance|run|serve|operator|where> (see signer-agent/src/cli.ts)");
        return command ? 2 : 0;
    }
  } catch (err) {
    if (err instanceof RefusedError) {
      process.stderr.write(`refused at ${err.stage}: ${err.message}\n`);
      return 3;
    }
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

const isTreasuryAction = (a: string | undefined): a is TreasuryAction => (TREASURY_ACTIONS as readonly (string | undefined)[]).includes(a);
