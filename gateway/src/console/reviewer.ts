/**
 * The reviewer's view (admin token): the access-request queue, taking a request into review, closing it with an
 * outcome (an approval issues a live key, queued in the operator's outbox, never shown here), each request's
 * history.
 */
import { ApiFailure, api } from "./api";
import { money, when } from "./figures";
import { app, esc, showError } from "./page";

const REVIEWER_TOKEN = "console.admin_token";
const REVIEWER_NAME = "console.reviewer";

export async function reviewer(): Promise<void> {
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
