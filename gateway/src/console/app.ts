/**
 * The console (issue 15), a page of the gateway's own: bundled by esbuild
 * from this file when first asked for (console/serve.ts), no CDN. Two people:
 *
 * - the reviewer (admin token): the access-request queue, taking a request
 *   into review, closing it with an outcome, each request's history
 *   (reviewer.ts);
 * - the operator of a managed treasury, signed in with a Safe owner's wallet
 *   (EIP-1193 provider, an EIP-4361 message: session.ts, wallet.ts): the Safe's
 *   Aave position and LTV zones, health and LTV over time with the protect and
 *   park lines (position-charts.ts), the delegation state with approve and
 *   revoke as Safe transactions the wallet signs and sends, pending Safe
 *   transactions to sign, protection actions, the fee audit and this month's
 *   gas-cap spending (operator.ts).
 *
 * Every figure is the API's, shown as the API gives it (no rounding here).
 * This file routes between the two views (#operator, #reviewer).
 */
import { operator } from "./operator";
import { app } from "./page";
import { reviewer } from "./reviewer";
import { session } from "./session";

let timer: number | undefined;

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
