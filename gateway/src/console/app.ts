/**
 * The console (issue 15), a page of the gateway's own: bundled by esbuild
 * from this file when first asked for (console/serve.ts), no CDN. Two people:
 *
 * - the reviewer (admin token): the access-request queue, taking a request
 *   into review, closing it with an outcome, each request's history;
 * - the operator of a managed treasury, signed in with a Safe owner's wallet
 *   (EIP-1193 provider, an EIP-4361 message): the Safe's Aave position and
 *   LTV zones, health and LTV over time with the protect and park lines, the
 *   delegation state with approve and revoke as Safe transactions the wallet
 *   signs and sends, pending Safe transactions to sign, protection actions,
 *   the fee audit and this month's gas-cap spending.
 *
 * Every figure is the API's, shown as the API gives it (no rounding here).
 */
import { encodeFunctionData, type Hex } from "viem";
import { SAFE_ABI } from "@treasury/core/contracts/safe";
import { figure, money, when } from "./figures";

interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}
declare global {
  interface Window {
    ethereum?: Eip1193;
  }
}

const app = document.getElementById("app")!;
const esc = (v: unknown): string => String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
const num = figure;

class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(`${body.error ?? status}: ${body.message ?? ""}`);
  }
}

async function api(path: string, opts: { method?: string; body?: unknown; token?: string } = {}): Promise<any> {
  const res = await fetch(path, {
    method: opts.method ?? "GET",
    headers: { ...(opts.body === undefined ? {} : { "content-type": "application/json" }), ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) throw new ApiFailure(res.status, body);
  return body;
}

function showError(where: HTMLElement, err: unknown): void {
  const box = document.createElement("div");
  box.className = "error";
  box.setAttribute("role", "alert");
  box.dataset.testid = "error";
  box.textContent = `Error - ${err instanceof Error ? err.message : String(err)}`;
  where.prepend(box);
}

// ---------------------------------------------------------------- reviewer

const REVIEWER_TOKEN = "console.admin_token";
const REVIEWER_NAME = "console.reviewer";

async function reviewer(): Promise<void> {
  const token = sessionStorage.getItem(REVIEWER_TOKEN);
  app.className = "";
  if (!token) {
    app.innerHTML = `<section><h2>Reviewer sign-in</h2>
      <form id="admin-form" class="row"><label>Admin token <input id="admin-token" type="password" autocomplete="off" required /></label>
      <label>Your name <input id="reviewer-name" value="${esc(localStorage.getItem(REVIEWER_NAME) ?? "")}" required /></label>
      <button class="primary" type="submit">Open the queue</button></form></section>`;
    document.getElementById("admin-form")!.addEventListener("submit", (e) => {
      e.preventDefault();
      sessionStorage.setItem(REVIEWER_TOKEN, (document.getElementById("admin-token") as HTMLInputElement).value);
      localStorage.setItem(REVIEWER_NAME, (document.getElementById("reviewer-name") as HTMLInputElement).value);
      void reviewer();
    });
    return;
  }
  const name = localStorage.getItem(REVIEWER_NAME) || "reviewer";
  let list: any;
  try {
    list = await api("/admin/access-requests", { token });
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 401) sessionStorage.removeItem(REVIEWER_TOKEN);
    app.innerHTML = `<section><button id="retry">Sign in again</button></section>`;
    document.getElementById("retry")!.onclick = () => void reviewer();
    showError(app, err);
    return;
  }
  const order = { in_review: 0, received: 1, closed: 2 } as Record<string, number>;
  const requests = [...list.data].sort((a: any, b: any) => order[a.status]! - order[b.status]! || String(b.submitted_at).localeCompare(String(a.submitted_at)));
  app.innerHTML = `<section class="wide"><div class="row"><h2>Access requests</h2><span class="muted">as ${esc(name)}</span>
      <button id="refresh">Refresh</button><button id="signout">Sign out</button></div>
      <p class="muted">${requests.length} request(s): ${requests.filter((r: any) => r.status === "received").length} received, ${requests.filter((r: any) => r.status === "in_review").length} in review, ${requests.filter((r: any) => r.status === "closed").length} closed.</p>
      ${requests.map((r: any) => requestCard(r)).join("") || "<p>No access requests.</p>"}</section>`;
  document.getElementById("refresh")!.onclick = () => void reviewer();
  document.getElementById("signout")!.onclick = () => {
    sessionStorage.removeItem(REVIEWER_TOKEN);
    void reviewer();
  };
  for (const b of app.querySelectorAll<HTMLButtonElement>("button[data-review]")) {
    b.onclick = async () => {
      try {
        await api(`/admin/access-requests/${b.dataset.review}/review`, { method: "POST", token, body: { reviewer: name } });
        await reviewer();
      } catch (err) {
        showError(app, err);
      }
    };
  }
  for (const f of app.querySelectorAll<HTMLFormElement>("form[data-close]")) {
    f.onsubmit = async (e: SubmitEvent) => {
      e.preventDefault();
      const data = new FormData(f);
      const outcome = String(data.get("outcome"));
      const note = String(data.get("note") ?? "").trim();
      if (outcome === "declined" && !note) return showError(app, new Error("a declined request needs its reason"));
      try {
        const closed = await api(`/admin/access-requests/${f.dataset.close}/close`, {
          method: "POST",
          token,
          body: { reviewer: name, outcome, ...(note ? { note } : {}) },
        });
        await reviewer();
        const done = document.createElement("p");
        done.dataset.testid = "close-result";
        done.setAttribute("role", "status");
        done.textContent = closed.live_key_issued
          ? `Request ${closed.id} approved: a live key was issued and queued in the operator's outbox (never shown here).`
          : `Request ${closed.id} closed: ${outcome}.`;
        app.prepend(done);
      } catch (err) {
        showError(app, err);
      }
    };
  }
}

/**
 * What an applicant or a reviewer wrote, as text: escaped, and in its own bidirectional isolate (<bdi>), so
 * that a right-to-left override stored before the gateway refused them (packages/core/src/schemas/common.ts personText)
 * ends with its field and cannot reorder what stands beside it.
 */
const userText = (field: string, v: unknown): string => `<bdi data-field="${field}">${esc(v)}</bdi>`;

function requestCard(r: any): string {
  const history = (r.events ?? [])
    .map(
      (e: any) =>
        `<li>${esc(e.at)}: ${esc(e.fromStatus ?? "(none)")} to <strong>${esc(e.toStatus)}</strong> by ${userText("actor", e.actor)}${e.note ? ` - ${userText("note", e.note)}` : ""}</li>`,
    )
    .join("");
  const action =
    r.status === "received"
      ? `<button class="primary" data-review="${esc(r.id)}">Take into review</button>`
      : r.status === "in_review"
        ? `<form data-close="${esc(r.id)}" class="row"><label>Outcome <select name="outcome"><option value="approved">approved (issue a live key)</option><option value="declined">declined</option></select></label>
           <label>Reason or note <input name="note" /></label><button class="primary" type="submit">Close request</button></form>`
        : `<p>Outcome: <strong>${esc(r.outcome)}</strong>${r.outcome_note ? ` - ${userText("outcome_note", r.outcome_note)}` : ""} (closed ${esc(when(r.closed_at))})</p>`;
  return `<div class="card" data-testid="request" data-id="${esc(r.id)}" data-status="${esc(r.status)}">
    <div class="row"><span class="badge">${esc(r.status)}</span><span class="mono">${esc(r.id)}</span><span class="muted">submitted ${esc(when(r.submitted_at))}</span></div>
    <dl><dt>Operator</dt><dd>${userText("operator_name", r.operator_name)} &lt;${userText("operator_email", r.operator_email)}&gt;${r.company ? ` - ${userText("company", r.company)}` : ""}</dd><dt>Agent</dt><dd>${userText("agent_name", r.agent_name)}${r.agent_framework ? ` (${userText("agent_framework", r.agent_framework)})` : ""}</dd>
    <dt>Use case</dt><dd class="text">${userText("use_case", r.use_case)}</dd>${r.wallet_address ? `<dt>Wallet</dt><dd class="mono">${esc(r.wallet_address)} on ${esc(r.chain)}</dd>` : ""}
    ${r.expected_monthly_volume_usdc !== null && r.expected_monthly_volume_usdc !== undefined ? `<dt>Monthly volume</dt><dd>${money(r.expected_monthly_volume_usdc)} USDC</dd>` : ""}</dl>
    ${action}<details><summary>History (${(r.events ?? []).length})</summary><ul>${history}</ul></details></div>`;
}

// ---------------------------------------------------------------- operator

const SESSION = "console.operator_session";

interface Session {
  session_key: string;
  safe: `0x${string}`;
  owner: `0x${string}`;
  treasury_id: string;
  expires_at: string;
  threshold: number;
}

const session = (): Session | null => {
  const s = JSON.parse(sessionStorage.getItem(SESSION) ?? "null") as Session | null;
  return s && s.expires_at > new Date().toISOString() ? s : null;
};

function wallet(): Eip1193 {
  if (!window.ethereum) throw new Error("no wallet in this browser (an EIP-1193 provider, window.ethereum)");
  return window.ethereum;
}

async function signIn(safe: string): Promise<void> {
  const [owner] = (await wallet().request({ method: "eth_requestAccounts" })) as string[];
  if (!owner) throw new Error("the wallet gave no account");
  const statement = await api(`/api/v1/console/sign-in?owner=${encodeURIComponent(owner)}&safe=${encodeURIComponent(safe)}`);
  const signature = await wallet().request({ method: "personal_sign", params: [toHex(statement.message), owner] });
  const s = await api("/api/v1/console/sessions", { method: "POST", body: { owner, safe, nonce: statement.nonce, issued_at: statement.issued_at, signature } });
  sessionStorage.setItem(SESSION, JSON.stringify(s));
}

const toHex = (text: string): Hex => `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;

/** the live samples this page took (the server's history has the rest) */
const live: { at: string; ltv: number; health_score: number }[] = [];
let timer: number | undefined;

async function operator(): Promise<void> {
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
      sessionStorage.removeItem(SESSION);
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
  <section class="wide"><h2>Fee audit (${audit.data.length})</h2><div class="scroll"><table data-testid="audit">
    <tr><th>Time</th><th>Action</th><th>Amount</th><th>Fee</th><th>Trigger</th></tr>
    ${(audit.data as any[]).map((a) => `<tr><td title="${esc(a.created_at)}">${esc(when(a.created_at))}</td><td>${esc(a.action)}</td><td>${money(a.amount_usdc)} USDC</td><td>${money(a.fee_usdc)} USDC</td><td>${esc(a.trigger)}</td></tr>`).join("")}
    </table></div></section>`;

  document.getElementById("signout")!.onclick = () => {
    sessionStorage.removeItem(SESSION);
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

async function waitForReceipt(hash: Hex): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const receipt = (await wallet().request({ method: "eth_getTransactionReceipt", params: [hash] })) as { status: string } | null;
    if (receipt) {
      if (receipt.status !== "0x1") throw new Error(`transaction ${hash} reverted`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`transaction ${hash} not mined yet`);
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

function zoneBar(zones: any, ltv: number): string {
  if (!zones) return "";
  const max = Math.max(100, Number(zones.hard_ceiling) + 20);
  const part = (name: string, z: { min: number; max: number }) =>
    `<div style="width:${((z.max - z.min) / max) * 100}%" title="${esc(name)} ${z.min}-${z.max}%">${esc(name)}</div>`;
  return `<div class="zones" aria-hidden="true">${part("safe", zones.safe)}${part("active", zones.active)}${part("ceiling", zones.ceiling)}<div style="flex:1">refused</div>
    <div class="marker" style="left:${(Math.min(ltv, max) / max) * 100}%"><span>LTV ${num(ltv)}</span></div></div>
    <p class="muted" data-testid="zones">LTV zones: safe ${num(zones.safe.min)}-${num(zones.safe.max)} %, active ${num(zones.active.min)}-${num(zones.active.max)} %, ceiling ${num(zones.ceiling.min)}-${num(zones.ceiling.max)} %; a borrow above ${num(zones.hard_ceiling)} % is refused.</p>`;
}

/** LTV (solid, left axis %) and health score (dashed, right axis) over time, the park line (LTV) and the protect line (health) */
function chart(points: { at: string; ltv: number; health_score: number }[], protectAt: number, parkAt: number): string {
  const W = 600,
    H = 240,
    L = 36,
    R = 36,
    T = 12,
    B = 26;
  const pts = points.filter((p) => Number.isFinite(Date.parse(p.at))).sort((a, b) => a.at.localeCompare(b.at));
  if (pts.length === 0) return `<p>No samples yet.</p>`;
  const t0 = Date.parse(pts[0]!.at),
    t1 = Math.max(Date.parse(pts.at(-1)!.at), t0 + 1000);
  const HMAX = 4;
  const x = (at: string) => L + ((Date.parse(at) - t0) / (t1 - t0)) * (W - L - R);
  const yL = (ltv: number) => T + (1 - Math.min(ltv, 100) / 100) * (H - T - B);
  const yH = (h: number) => T + (1 - Math.min(h, HMAX) / HMAX) * (H - T - B);
  const line = (f: (p: (typeof pts)[number]) => number) => pts.map((p, i) => `${i ? "L" : "M"}${x(p.at).toFixed(1)},${f(p).toFixed(1)}`).join(" ");
  const last = pts.at(-1)!;
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" data-testid="chart" data-points="${pts.length}" aria-label="LTV and health score over time: latest LTV ${last.ltv}, health ${last.health_score}">
    <rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#bbb"/>
    ${[0, 25, 50, 75, 100].map((v) => `<text x="2" y="${yL(v) + 3}">${v}%</text>`).join("")}
    ${[0, 1, 2, 3, 4].map((v) => `<text x="${W - R + 4}" y="${yH(v) + 3}">${v}</text>`).join("")}
    <line x1="${L}" x2="${W - R}" y1="${yL(parkAt)}" y2="${yL(parkAt)}" stroke="#111" stroke-dasharray="2 4"/><text x="${L + 4}" y="${yL(parkAt) - 3}">park ${parkAt}% LTV</text>
    <line x1="${L}" x2="${W - R}" y1="${yH(protectAt)}" y2="${yH(protectAt)}" stroke="#111" stroke-dasharray="8 3 2 3"/><text x="${W - R - 110}" y="${yH(protectAt) - 3}">protect below ${protectAt}</text>
    <path d="${line((p) => yL(p.ltv))}" fill="none" stroke="#111" stroke-width="2" data-series="ltv"/>
    <path d="${line((p) => yH(p.health_score))}" fill="none" stroke="#555" stroke-width="2" stroke-dasharray="6 3" data-series="health"/>
    <text x="${L}" y="${H - 8}">${esc(pts[0]!.at.slice(11, 19))} UTC</text><text x="${W - R - 60}" y="${H - 8}">${esc(last.at.slice(11, 19))} UTC</text>
    <text x="${L + 150}" y="${H - 8}">solid: LTV % (left) - dashed: health score (right)</text></svg>`;
}

// ---------------------------------------------------------------- routing

async function route(): Promise<void> {
  if (timer !== undefined) window.clearInterval(timer);
  const view = location.hash === "#reviewer" ? "reviewer" : "operator";
  for (const v of ["operator", "reviewer"]) document.getElementById(`nav-${v}`)!.toggleAttribute("aria-current", v === view);
  document.getElementById(`nav-${view}`)!.setAttribute("aria-current", "page");
  if (view === "reviewer") return reviewer();
  await operator();
  // the operator's page follows the position while it is open
  timer = window.setInterval(
    () => {
      if (session() && !document.hidden && !app.querySelector("[data-testid=error]") && !document.activeElement?.closest("form")) void operator();
    },
    Number(new URLSearchParams(location.search).get("refresh_ms") ?? 3000),
  );
}

window.addEventListener("hashchange", () => void route());
void route();
