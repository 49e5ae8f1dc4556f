/**
 * The operator's view, signed in with a Safe owner's wallet: the Safe's Aave position and LTV zones, health and
 * LTV over time with the protect and park lines, the delegation state with approve, revoke and upgrade as Safe
 * transactions the wallet signs and sends, pending Safe transactions to sign, protection actions, the treasury's
 * event log as it happens (event-log.ts), the fee audit and this month's gas-cap spending.
 */
import { encodeFunctionData, type Hex } from "viem";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { ApiFailure, api } from "./api";
import { figure as num, money, when } from "./figures";
import { app, esc, showError } from "./page";
import { chart, zoneBar } from "./position-charts";
import { eventLogSection, followEvents, unfollowEvents } from "./event-log";
import { forgetSession, session, signIn, type Session } from "./session";
import { waitForReceipt, wallet } from "./wallet";

/** the live samples this page took (the server's history has the rest) */
const live: { at: string; ltv: number; health_score: number }[] = [];

export async function operator(): Promise<void> {
  app.className = "grid";
  const s = session();
  if (!s) {
    app.innerHTML = `<section class="wide"><h2>Operator sign-in</h2>
      <p>Sign in with the wallet of an owner of your Safe. The wallet signs a message (Sign-In with Ethereum); nothing is sent and no funds move.</p>
      <form id="signin" class="row"><label style="flex:1 1 24rem">Safe address <input id="safe" class="addr" placeholder="0x..." required pattern="0x[0-9a-fA-F]{40}" /></label>
      <button class="primary" type="submit">Connect wallet and sign in</button></form></section>`;
    document.getElementById("signin")!.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        await signIn((document.getElementById("safe") as HTMLInputElement).value.trim());
        await operator();
      } catch (err) {
        showError(app, err);
      }
    });
    return;
  }
  const token = s.session_key;
  const get = (p: string) => api(p, { token });
  let data: Record<string, any>;
  try {
    const [treasury, health, policy, delegation, queue, audit, history] = await Promise.all([
      get("/api/v1/treasury"),
      get("/api/v1/health"),
      get("/api/v1/policy-state"),
      get("/api/v1/delegation"),
      get("/api/v1/safe-transactions?status=all"),
      get("/api/v1/audit?limit=200"),
      get("/api/v1/health/history"),
    ]);
    data = { treasury, health, policy, delegation, queue, audit, history };
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 401) {
      // the session ended (expired or revoked): sign in again
      forgetSession();
      await operator();
    } else {
      app.innerHTML = "";
    }
    showError(app, err);
    return;
  }
  const { treasury, health, policy, delegation, queue, audit, history } = data;
  live.push({ at: new Date().toISOString(), ltv: treasury.ltv, health_score: treasury.health_score });
  if (live.length > 300) live.shift();
  const protectAt = Number(delegation.protect_below_health_score);
  const parkAt = Number(policy.ltv_bands?.park_target ?? 25);
  const open = (queue.data as any[]).filter((q) => q.status === "awaiting_signatures" || q.status === "executing");
  const done = (queue.data as any[]).filter((q) => !open.includes(q)).slice(0, 10);
  const zones = health.ltv_zones;

  app.innerHTML = `
  <section class="wide"><div class="row"><h2>Safe <span class="mono" data-testid="safe">${esc(s.safe)}</span></h2>
    <span class="muted">signed in as owner <span class="mono">${esc(s.owner)}</span> until ${esc(when(s.expires_at))}</span><button id="signout">Sign out</button></div></section>
  <section><h2>Aave position</h2>
    <dl><dt>Collateral on Aave</dt><dd data-testid="collateral">${money(treasury.collateral_value_usd)} USD</dd>
    <dt>Total value</dt><dd data-testid="total-value">${money(treasury.total_value_usd)} USD</dd>
    <dt>Debt</dt><dd data-testid="debt">${money(treasury.borrowed_usd)} USDC</dd>
    <dt>LTV</dt><dd data-testid="ltv">${num(treasury.ltv)} %</dd>
    <dt>Zone</dt><dd data-testid="zone">${esc(health.ltv_zone)}</dd>
    <dt>Health score</dt><dd data-testid="health">${num(treasury.health_score)}</dd>
    <dt>Protect below</dt><dd>${num(protectAt)} (health score)</dd><dt>Park target</dt><dd>${num(parkAt)} % LTV</dd></dl>
    ${zoneBar(zones, treasury.ltv)}</section>
  <section><h2>Health and LTV over time</h2>${chart([...history.points, ...live], protectAt, parkAt)}</section>
  <section><h2>Delegation</h2>
    <p>State: <span class="badge" data-testid="delegation-state">${esc(delegation.state)}</span></p>
    <dl><dt>Module</dt><dd class="mono">${esc(delegation.module ?? "none attached")}</dd><dt>Automation</dt><dd class="mono">${esc(delegation.requirements?.automation ?? "not configured")}</dd></dl>
    <div class="row">${delegation.module && ["not_granted", "revoked"].includes(delegation.state) ? `<button class="primary" id="approve">Approve delegation (Safe transaction)</button>` : ""}
    ${["active", "approved_pending_funds"].includes(delegation.state) ? `<button id="revoke">Revoke delegation (Safe transaction)</button>` : ""}
    ${delegation.pending_upgrade ? `<button class="primary" id="upgrade">Upgrade delegation to ${esc(delegation.pending_upgrade.module)} (Safe transaction: enable it, disable the module in force)</button>` : ""}</div>
    ${delegation.pending_upgrade ? `<p class="muted" data-testid="pending-upgrade">A newer module is attached with the Safe's signature; the module in force keeps protecting until the owners execute the upgrade.</p>` : ""}
    ${delegation.module ? "" : `<p class="muted">No module attached yet: <code>signer-agent operator approve</code> deploys the ProtectionModule and attaches it with the Safe's proof.</p>`}
    <h2>Gas caps (protection actions)</h2>
    <p data-testid="gas-month">${money(delegation.gas?.spent_this_month_usd)} USD of ${money(delegation.gas?.per_month_usd)} USD this month; at most ${money(delegation.gas?.per_action_usd)} USD an action.</p></section>
  <section><h2>Safe transactions to sign (${open.length})</h2>
    ${open.map((q) => safeTxCard(q, s)).join("") || `<p data-testid="no-pending">Nothing awaits your signature.</p>`}
    ${done.length ? `<details><summary>Recent (${done.length})</summary>${done.map((q) => safeTxCard(q, s)).join("")}</details>` : ""}</section>
  <section class="wide"><h2>Protection actions (${delegation.protection_actions.length})</h2><div class="scroll"><table data-testid="protection-actions">
    <tr><th>Time</th><th>Status</th><th>Trigger</th><th>LTV before / after</th><th>Repaid</th><th>Gas</th></tr>
    ${(delegation.protection_actions as any[]).map((a) => `<tr><td title="${esc(a.created_at)}">${esc(when(a.created_at))}</td><td>${esc(a.status)}</td><td>health ${num(a.health_before)} below ${num(protectAt)}${a.reason ? ` - ${esc(a.reason)}` : ""}</td><td>${num(a.ltv_before)} / ${num(a.ltv_after)}</td><td>${money(a.repay_usdc)} USDC</td><td>${money(a.gas_usd)} USD</td></tr>`).join("")}
    </table></div></section>
  ${eventLogSection()}
  <section class="wide"><h2>Fee audit (${audit.data.length})</h2><div class="scroll"><table data-testid="audit">
    <tr><th>Time</th><th>Action</th><th>Amount</th><th>Fee</th><th>Trigger</th></tr>
    ${(audit.data as any[]).map((a) => `<tr><td title="${esc(a.created_at)}">${esc(when(a.created_at))}</td><td>${esc(a.action)}</td><td>${money(a.amount_usdc)} USDC</td><td>${money(a.fee_usdc)} USDC</td><td>${esc(a.trigger)}</td></tr>`).join("")}
    </table></div></section>`;

  // the event log, live: its stream outlives this render
  followEvents(token);

  document.getElementById("signout")!.onclick = () => {
    unfollowEvents();
    forgetSession();
    live.length = 0;
    void operator();
  };
  const change = async (kind: "approve" | "revoke" | "upgrade") => {
    try {
      const prepared = await get(`/api/v1/delegation/safe-transaction?change=${kind}`);
      const signature = (await wallet().request({ method: "eth_signTypedData_v4", params: [s.owner, JSON.stringify(prepared.typed_data)] })) as Hex;
      const t = prepared.safe_tx;
      const data = encodeFunctionData({
        abi: SAFE_ABI,
        functionName: "execTransaction",
        args: [t.to, BigInt(t.value), t.data, t.operation, BigInt(t.safeTxGas), BigInt(t.baseGas), BigInt(t.gasPrice), t.gasToken, t.refundReceiver, signature],
      });
      const hash = (await wallet().request({ method: "eth_sendTransaction", params: [{ from: s.owner, to: prepared.safe, data }] })) as Hex;
      await waitForReceipt(hash);
      await operator();
    } catch (err) {
      showError(app, err);
    }
  };
  const approve = document.getElementById("approve");
  if (approve) approve.onclick = () => void change("approve");
  const upgrade = document.getElementById("upgrade");
  if (upgrade) upgrade.onclick = () => void change("upgrade");
  const revoke = document.getElementById("revoke");
  if (revoke) revoke.onclick = () => void change("revoke");
  for (const b of app.querySelectorAll<HTMLButtonElement>("button[data-sign]")) {
    b.onclick = async () => {
      b.disabled = true;
      try {
        const q = open.find((x) => x.id === b.dataset.sign)!;
        const signature = await wallet().request({ method: "eth_signTypedData_v4", params: [s.owner, JSON.stringify(q.typed_data)] });
        await api(`/api/v1/safe-transactions/${q.id}/signatures`, { method: "POST", token, body: { signature } });
        await operator();
      } catch (err) {
        b.disabled = false;
        showError(app, err);
      }
    };
  }
}

function safeTxCard(q: any, s: Session): string {
  const signedByMe = (q.signatures as any[]).some((x) => x.owner.toLowerCase() === s.owner.toLowerCase());
  return `<div class="card" data-testid="safe-tx" data-id="${esc(q.id)}" data-status="${esc(q.status)}">
    <div class="row"><span class="badge">${esc(q.status)}</span><strong data-testid="safe-tx-title">${esc(q.title ?? `${q.action} ${q.amount_usdc} USDC`)}</strong><span class="muted">fee ${money(q.fee_usdc)} USDC</span></div>
    <ul class="calls">${(q.calls as any[]).map((c) => `<li>${esc(c.summary?.description ?? c.kind)}</li>`).join("")}</ul>
    <p class="muted">${q.signatures.length} signature(s), the Safe needs ${num(q.confirmations_required ?? s.threshold)}; Safe nonce ${esc(q.safe_tx.nonce)}; until ${esc(when(q.expires_at))}<br/>hash <span class="mono">${esc(q.safe_tx_hash)}</span></p>
    ${q.tx_hash ? `<p>Executed in <span class="mono" data-testid="tx-hash">${esc(q.tx_hash)}</span></p>` : ""}
    ${q.failure ? `<p>Failed: ${esc(q.failure.error)} - ${esc(q.failure.message)}</p>` : ""}
    ${q.status === "awaiting_signatures" && !signedByMe ? `<button class="primary" data-sign="${esc(q.id)}">Sign with wallet</button>` : ""}
    ${q.status === "awaiting_signatures" && signedByMe ? `<p>You signed it; the service executes it once the Safe's threshold is reached.</p>` : ""}</div>`;
}
