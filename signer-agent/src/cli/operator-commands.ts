/**
 * `signer-agent operator <subcommand>`: the operator's managed treasury on a
 * Safe it owns (operator.ts): created, funded, registered, its delegation
 * approved or revoked, managed actions proposed and signed. Its state (Safe,
 * treasury, API key, module) is kept in operator.json beside its keystore.
 * Each chain step is a line on stderr; the answer is on stdout.
 */
import fs from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { declarationOf } from "@treasury/core/actions";
import { SignerAgent } from "../agent";
import { agentConfig } from "../config";
import { SignerAgentError } from "../errors";
import { eth, pct, usdc, usdcNumber } from "../format";
import { gatewayJson } from "../gateway-client";
import { loadKey } from "../keystore";
import { assertServiceIsGateway } from "../registration";
import { readStackFile } from "../stack-file";
import { isTreasuryAction } from "./actions";
import { checkActionArgs, parseAmount } from "./amounts";
import { UsageError } from "./args";
import { out, printJson } from "./io";

interface OperatorState {
  safe?: `0x${string}`;
  api_key?: string;
  treasury_id?: string;
  module?: `0x${string}`;
}

export async function operatorCommand(sub: string, rest: string[], flags: Record<string, string | boolean>, log: (line: string) => void): Promise<number> {
  const cfg = agentConfig({ ...flags, dir: (flags.dir as string) ?? process.env.OPERATOR_DIR ?? readStackFile()?.operator.dir ?? "./.data/operator" });
  const stateFile = path.join(path.dirname(cfg.keystore), "operator.json");
  const state = (fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, "utf8")) : {}) as OperatorState;
  const save = () => fs.writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  const gateway = (method: string, p: string, body?: unknown) => gatewayJson(cfg.gatewayUrl, method, p, { body, bearer: state.api_key });
  const needs = (what: keyof OperatorState, how: string) => {
    if (!state[what])
      throw new SignerAgentError(
        "operator_not_set_up",
        `no ${what === "safe" ? "Safe" : what === "api_key" ? "registered treasury" : "module"} yet in ${stateFile}: ${how}`,
      );
  };
  /** the operator's key and its Safe, for the subcommands that sign */
  const operator = async () => {
    const privateKey = await loadKey({ keystore: cfg.keystore, passphrase: cfg.passphrase, rawKey: cfg.devRawKey, allowRawKey: Boolean(cfg.devRawKey) });
    const { Operator } = await import("../operator");
    const o = new Operator({ privateKey, rpcUrl: cfg.rpcUrl, progress: log });
    if (state.safe) {
      log(`connecting to the Safe ${state.safe}`);
      await o.connect(state.safe);
    }
    return o;
  };
  /** the service a signed statement names: the gateway's public base URL, as it states it */
  const serviceName = async (): Promise<string> =>
    assertServiceIsGateway(
      (
        await gateway(
          "GET",
          `/api/v1/treasuries/ownership-statement?wallet_address=${state.safe ?? "0x0000000000000000000000000000000000000001"}&execution_mode=managed`,
        )
      ).typed_data.message.service,
      cfg.gatewayUrl,
    );
  switch (sub) {
    case "create-safe": {
      const o = await operator();
      state.safe = await o.createSafe();
      save();
      out(`Safe ${state.safe} created, owned by ${o.account.address} (threshold 1)`);
      return 0;
    }
    case "fund": {
      const wei = parseAmount("operator fund", "<weth>", rest[0] ?? "1", "WETH", 18, 18);
      const borrow = typeof flags.borrow === "string" ? parseAmount("operator fund", "--borrow", flags.borrow, "USDC", 6) : 0n;
      needs("safe", "signer-agent operator create-safe");
      const o = await operator();
      await o.fundWeth(wei);
      await o.supplyAndBorrow(wei, borrow);
      out(`supplied ${eth(wei, "WETH")}${borrow ? ` and borrowed ${usdc(borrow)}` : ""} through the Safe`);
      return 0;
    }
    case "register": {
      needs("safe", "signer-agent operator create-safe");
      const o = await operator();
      // the Safe proves it stands behind the registration (EIP-1271 through the operator's signature), naming the service as the gateway names itself
      log("asking the gateway for the ownership statement");
      const ownership_proof = await o.ownershipProof(await serviceName(), "managed");
      log("registering the managed treasury (POST /api/v1/treasuries)");
      const t = await gateway("POST", "/api/v1/treasuries", { wallet_address: state.safe, execution_mode: "managed", ownership_proof });
      state.api_key = t.api_key;
      state.treasury_id = t.treasury_id;
      save();
      out(`managed treasury ${t.treasury_id} registered; its key is kept in ${stateFile}`);
      return 0;
    }
    case "approve": {
      const protect = flags["protect-below"];
      needs("api_key", "signer-agent operator register");
      log("reading the delegation's requirements from the gateway");
      const d = await gateway("GET", "/api/v1/delegation");
      if (!d.requirements.automation) throw new SignerAgentError("automation_unconfigured", "the gateway has no automation address configured");
      const o = await operator();
      // --upgrade: a module of this build replaces the one in force, which keeps protecting until the Safe enables the new one
      const upgrade = Boolean(flags.upgrade) && Boolean(d.module);
      if (upgrade || !state.module) state.module = await o.deployModule(d.requirements.automation, d.requirements.park_target_bps);
      save();
      const protectBelow = typeof protect === "string" ? Number(protect) : Number(d.protect_below_health_score);
      log("signing the delegation as the Safe and attaching the module (POST /api/v1/delegation)");
      const safe_proof = await o.delegationProof({
        service: await serviceName(),
        treasuryId: state.treasury_id!,
        module: state.module!,
        protectBelowHealth: protectBelow,
        parkTargetBps: d.requirements.park_target_bps,
        maxSlippageBps: d.requirements.max_slippage_bps,
      });
      await gateway("POST", "/api/v1/delegation", { module: state.module, protect_below_health_score: protectBelow, safe_proof });
      if (upgrade) {
        // one Safe transaction the gateway prepares: enableModule of the new module, disableModule of the old one
        log("executing the upgrade the gateway prepared (one Safe transaction)");
        const prepared = await gateway("GET", "/api/v1/delegation/safe-transaction?change=upgrade");
        const hash = await o.executeUpgrade(prepared as never, state.module!);
        out(`delegation upgraded: module ${prepared.module} enabled, ${prepared.replaces} disabled, in one Safe transaction (${hash})`);
      } else {
        const hash = await o.approveDelegation(state.module!);
        out(`delegation approved: module ${state.module} enabled on the Safe (${hash})`);
      }
      out(JSON.stringify(await gateway("GET", "/api/v1/delegation"), null, 2));
      return 0;
    }
    case "revoke": {
      needs("module", "signer-agent operator approve");
      const o = await operator();
      const hash = await o.revokeDelegation(state.module!);
      log(`waiting for the Safe transaction's receipt (${hash})`);
      await o.publicClient.waitForTransactionReceipt({ hash });
      out(`delegation revoked: module ${state.module} disabled (${hash}); already-submitted actions may still settle`);
      return 0;
    }
    case "propose": {
      // a managed action through the Safe: the gateway answers its receipt and queues one Safe transaction for the owners
      const [action, ...amountArgs] = rest;
      if (!isTreasuryAction(action)) throw new UsageError("operator propose", `unknown action "${action}"`);
      const { amount, unit } = checkActionArgs("operator propose", action, amountArgs, flags);
      needs("api_key", "signer-agent operator register");
      const d = declarationOf(action);
      log(`proposing ${action} to the gateway (POST ${d.route.path})`);
      const receipt = await gatewayJson(cfg.gatewayUrl, "POST", d.route.path, {
        body: SignerAgent.bodyOf(action, amount ?? "0", flags),
        bearer: state.api_key,
        idempotencyKey: `op-${randomUUID()}`,
      });
      out(
        `${action}${amount === undefined ? "" : ` ${amount} ${unit}`}: receipt ${receipt[d.receiptId]} ${receipt.status}; Safe transaction ${receipt.safe_transaction?.id ?? "(none)"} awaits the owners (signer-agent operator sign)`,
      );
      return 0;
    }
    case "queue": {
      needs("api_key", "signer-agent operator register");
      const { data } = await gateway("GET", "/api/v1/safe-transactions");
      for (const q of data)
        out(
          `${q.id} ${q.action} ${usdcNumber(q.amount_usdc)} (fee ${usdcNumber(q.fee_usdc)}) ${q.status}: ${q.signatures.length} of ${q.confirmations_required ?? "?"} signed; ${q.calls.length} calls; hash ${q.safe_tx_hash}`,
        );
      if (data.length === 0) out("no Safe transaction awaits the owners");
      return 0;
    }
    case "sign":
      return sign(rest[0], Boolean(flags.wait), gateway, operator, log);
    case "status":
      return status(state, Boolean(flags.json), gateway, () => needs("api_key", "signer-agent operator register"));
    case "events":
      needs("api_key", "signer-agent operator register");
      return events(gateway, typeof flags.wait === "string" ? flags.wait : undefined, log);
    default:
      throw new UsageError("operator", `unknown operator subcommand "${sub}"`);
  }
}

/** a USD figure the gateway states as a JSON number, to the cent */
const usd2 = (n: unknown) => (typeof n === "number" ? `${n.toFixed(2)} USD` : "? USD");

type Gateway = (method: string, p: string, body?: unknown) => Promise<Record<string, any>>;

/** sign every open Safe transaction (or the one named), each checked first against the Safe itself (Operator.signQueued) */
async function sign(
  id: string | undefined,
  wait: boolean,
  gateway: Gateway,
  operator: () => Promise<{ signQueued(q: never): Promise<`0x${string}`> }>,
  log: (line: string) => void,
): Promise<number> {
  const { data } = await gateway("GET", "/api/v1/safe-transactions");
  const chosen = (data as { id: string; status: string }[]).filter((q) => q.status === "awaiting_signatures" && (!id || q.id === id));
  if (chosen.length === 0) out(id ? `no open Safe transaction ${id}` : "no Safe transaction awaits the owners");
  const o = chosen.length ? await operator() : undefined;
  for (const q of chosen) {
    log(`checking ${q.id} against the Safe and signing it`);
    const signature = await o!.signQueued(q as never);
    const signed = await gateway("POST", `/api/v1/safe-transactions/${q.id}/signatures`, { signature });
    out(
      `signed ${q.id} (${signed.action} ${usdcNumber(signed.amount_usdc)}): ${signed.signatures.length} of ${signed.confirmations_required} owners; the service executes it once the threshold is reached`,
    );
    if (!wait) continue;
    // --wait: until the service's executor has executed it (or refused it), at most a minute
    log(`waiting for the service to execute ${q.id} (at most a minute)`);
    for (let i = 0; i < 600; i++) {
      const now = await gateway("GET", `/api/v1/safe-transactions/${q.id}`);
      if (now.status === "executed") {
        out(`executed ${q.id} in ${now.tx_hash}; receipt ${now.receipt_id} completed`);
        break;
      }
      if (now.status === "failed" || now.status === "expired")
        throw new SignerAgentError("safe_execution_failed", `${q.id} ${now.status}: ${now.failure?.error}: ${now.failure?.message}`);
      if (i === 599) throw new SignerAgentError("safe_execution_timed_out", `${q.id} not executed within a minute (is the protection process running?)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return 0;
}

/** what the event's data says, in one line */
function eventLine(e: { sequence: number; type: string; data: Record<string, any> }): string {
  const d = e.data;
  const what =
    e.type === "protection.acted"
      ? `repaid ${d.repaid_usdc} USDC through the module (health ${d.trigger?.health_before} before), LTV ${d.ltv_after}% after, ${d.tx_hashes.length} transaction${d.tx_hashes.length === 1 ? "" : "s"}, gas ${usd2(d.gas_usd)}`
      : e.type === "health.zone_changed"
        ? `${d.previous_zone ?? "(first read)"} -> ${d.zone}, LTV ${d.ltv}%`
        : e.type === "delegation.changed"
          ? `${d.change}`
          : e.type.startsWith("safe_transaction.")
            ? `${d.safe_transaction_id}${d.action ? ` ${d.action} ${d.amount_usdc} USDC` : ""}${d.status ? ` ${d.status}` : ""}`
            : JSON.stringify(d);
  return `${e.sequence} ${e.type}: ${what}`;
}

/** the treasury's event log, oldest first; `--wait <type>`: until an event of that type is in it (at most a minute) */
async function events(gateway: Gateway, waitFor: string | undefined, log: (line: string) => void): Promise<number> {
  let after = 0;
  const deadline = Date.now() + 60_000;
  if (waitFor) log(`waiting for ${waitFor} (at most a minute)`);
  for (;;) {
    const page = await gateway("GET", `/api/v1/events?after=${after}&limit=500`);
    const list = page.data as { sequence: number; type: string; data: Record<string, any> }[];
    for (const e of list) out(eventLine(e));
    after = page.next_after as number;
    if (!waitFor || list.some((e) => e.type === waitFor)) return 0;
    if (Date.now() > deadline) throw new SignerAgentError("event_timed_out", `no ${waitFor} event within a minute (is the protection process running?)`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** the delegation and the treasury's health: a summary, or with --json one document */
async function status(state: OperatorState, json: boolean, gateway: Gateway, registered: () => void): Promise<number> {
  registered();
  const [delegation, health] = await Promise.all([gateway("GET", "/api/v1/delegation"), gateway("GET", "/api/v1/health")]);
  if (json) {
    printJson({ object: "operator_status", safe: state.safe ?? null, treasury_id: state.treasury_id ?? null, delegation, health });
    return 0;
  }
  const actions = (delegation.protection_actions as unknown[]).length;
  out(`Safe        ${state.safe ?? "(none)"}`);
  out(`treasury    ${state.treasury_id ?? delegation.treasury_id}`);
  out(
    `delegation  ${delegation.state}${delegation.module ? `, module ${delegation.module}` : ", no module attached"}${delegation.protect_below_health_score !== undefined ? `; protection threshold: health ${delegation.protect_below_health_score}` : ""}`,
  );
  if (delegation.pending_upgrade) out(`            upgrade staged: module ${delegation.pending_upgrade.module} (${delegation.pending_upgrade.enable_with})`);
  out(
    `health      ${health.health_score}, LTV ${pct(health.ltv)} (zone ${health.ltv_zone}), ${health.environment === "chain" ? `read on ${health.source?.chain ?? "the chain"} at block ${health.source?.block_number ?? "?"}` : health.environment}`,
  );
  out(
    `protection  ${actions} action${actions === 1 ? "" : "s"} by the engine; gas this month ${usd2(delegation.gas?.spent_this_month_usd)} of ${usd2(delegation.gas?.per_month_usd)}`,
  );
  return 0;
}
