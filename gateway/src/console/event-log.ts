/**
 * The treasury's event log, live, on the operator's page: the gateway's Server-Sent Events stream
 * (GET /api/v1/events, Accept: text/event-stream) read with fetch, since the console signs its requests with
 * its session key in a header, which the browser's EventSource cannot send. The stream is opened once per
 * session key and outlives the page's re-renders; when it ends (the server closes streams after an hour, a
 * network blip) it is opened again from the last event it saw (Last-Event-ID). The newest events are shown
 * first, each with its type and what it says.
 */
import { figure as num, money, when } from "./figures";
import { esc } from "./page";

interface LoggedEvent {
  sequence: number;
  type: string;
  created_at: string;
  data: Record<string, any>;
}

/** the events this page has seen, oldest first (the last 200) */
const seen: LoggedEvent[] = [];
let following: string | undefined;
let stop: AbortController | undefined;

/** what an event says, in a line */
function said(e: LoggedEvent): string {
  const d = e.data;
  switch (e.type) {
    case "protection.acted":
      return `repaid ${money(Number(d.repaid_usdc))} USDC (health ${num(d.trigger?.health_before)} before), LTV ${num(d.ltv_after)} % after, gas ${money(d.gas_usd)} USD`;
    case "protection.failed":
      return `failed: ${d.reason}`;
    case "health.zone_changed":
      return `${d.previous_zone ?? "first read"} to ${d.zone}, LTV ${num(d.ltv)} %`;
    case "delegation.changed":
      return d.change;
    case "safe_transaction.awaiting_signatures":
      return `${d.action} ${d.amount_usdc} USDC waits for the owners' signatures`;
    case "safe_transaction.executed":
      return `${d.safe_transaction_id} ${d.status}`;
    default:
      return JSON.stringify(d);
  }
}

/** the log's section, as the page renders it (filled again on every new event) */
export function eventLogSection(): string {
  return `<section class="wide"><h2>Event log (live)</h2><div class="scroll"><table data-testid="event-log">${rows()}</table></div></section>`;
}

function rows(): string {
  return (
    `<tr><th>#</th><th>Time</th><th>Event</th><th>What happened</th></tr>` +
    [...seen]
      .reverse()
      .map(
        (e) =>
          `<tr data-type="${esc(e.type)}"><td>${e.sequence}</td><td title="${esc(e.created_at)}">${esc(when(e.created_at))}</td><td>${esc(e.type)}</td><td>${esc(said(e))}</td></tr>`,
      )
      .join("")
  );
}

function refresh(): void {
  const table = document.querySelector("[data-testid=event-log]");
  if (table) table.innerHTML = rows();
}

/** follow the treasury's events with this session key (once per key; a new key starts over) */
export function followEvents(token: string): void {
  if (following === token) return;
  stop?.abort();
  seen.length = 0;
  following = token;
  stop = new AbortController();
  void stream(token, stop.signal);
}

/** stop following (signed out) */
export function unfollowEvents(): void {
  stop?.abort();
  following = undefined;
  seen.length = 0;
}

async function stream(token: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const last = seen.at(-1)?.sequence;
      const res = await fetch("/api/v1/events", {
        headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, ...(last !== undefined ? { "last-event-id": String(last) } : {}) },
        signal,
      });
      if (res.status === 401 || res.status === 403) return; // the session ended: the page signs in again
      if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = message
            .split("\n")
            .filter((l) => l.startsWith("data: "))
            .map((l) => l.slice(6))
            .join("\n");
          if (!data) continue;
          seen.push(JSON.parse(data) as LoggedEvent);
          if (seen.length > 200) seen.shift();
          refresh();
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, 2_000)); // as the stream's `retry` says
  }
}
