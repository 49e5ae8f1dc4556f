/**
 * For the stages' unit tests (*.test.ts beside them): one stage served on a real Express app (its real
 * request and response), with its route's declaration and hooks. A stage that hands the request on is
 * answered 200 `{ next: true }` with what the stages before learned; a thrown TreasuryError is answered
 * as the app answers it (http/errors.ts), and anything else is kept in `thrown` (a 500).
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { errorHandler } from "../errors";
import { sendJson } from "../json-response";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import { requestState, type RequestStage, type RequestState } from "./stage";

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

export interface StageHarness {
  call(method: string, path: string, opts?: { headers?: Record<string, string>; body?: unknown }): Promise<Answer>;
  /** the states of the requests served, in order */
  states: RequestState[];
  /** errors that were not a TreasuryError */
  thrown: unknown[];
  close(): Promise<void>;
}

export async function serveStage(
  stage: Pick<RequestStage, "run">,
  spec: AnyRouteSpec,
  hooks: RouteHooks = {},
  prepare: (state: RequestState) => void = () => undefined,
): Promise<StageHarness> {
  const states: RequestState[] = [];
  const thrown: unknown[] = [];
  const app = express();
  app.use(express.json());
  app.use((req, res, next) => {
    res.locals.requestId = "req_test";
    const state = requestState(req, res, spec, hooks);
    states.push(state);
    prepare(state);
    stage
      .run(state, async () => sendJson(res, 200, { next: true, paying: state.paying, payment: state.payment?.nonce ?? null }))
      .then(() => {
        if (!res.headersSent) res.status(204).end();
      }, next);
  });
  const typed = errorHandler({ error: (obj) => void thrown.push((obj as { err: unknown }).err) });
  app.use(typed);
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    states,
    thrown,
    async call(method, path, opts = {}) {
      const r = await fetch(`${base}${path}`, {
        method,
        headers: { ...(opts.body === undefined ? {} : { "content-type": "application/json" }), ...opts.headers },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      });
      const text = await r.text();
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      return { status: r.status, headers: r.headers, text, body };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** a route's declaration, with what a test needs of it */
export const routeOf = (over: Partial<AnyRouteSpec> = {}): AnyRouteSpec => ({
  method: "post",
  path: "/r",
  operationId: "r",
  summary: "r",
  tags: [],
  responses: { 200: { description: "ok" } },
  handler: () => ({ status: 200, body: { ok: true } }),
  ...over,
});

/** the calls a fake made, by name, with their arguments */
export type CallLog = [string, ...unknown[]][];

/** an Idempotency-Key store in memory, with the store's semantics (claim, replay, mismatch, in progress, prepaid credit) */
export function memoryIdempotency(log: CallLog = []) {
  const rows = new Map<string, { fingerprint: string; holder: string; response?: { status: number; headers: Record<string, string>; body: string } }>();
  const prepaid = new Map<string, { payer: string; nonce: string }>();
  const id = (scope: string, key: string) => `${scope} ${key}`;
  const store = {
    rows,
    prepaid,
    log,
    async claim(scope: string, key: string, fingerprint: string, _now: Date, holder: string) {
      log.push(["claim", scope, key]);
      const row = rows.get(id(scope, key));
      if (!row) {
        rows.set(id(scope, key), { fingerprint, holder });
        return { kind: "claimed" as const, holder, reclaimed: false };
      }
      if (row.fingerprint !== fingerprint) return { kind: "mismatch" as const };
      if (row.response) return { kind: "replay" as const, response: row.response };
      return { kind: "in_progress" as const };
    },
    async renew() {
      return true;
    },
    async complete(scope: string, key: string, response: { status: number; headers: Record<string, string>; body: string }, holder: string) {
      log.push(["complete", scope, key, response.status]);
      const row = rows.get(id(scope, key));
      if (row?.holder === holder) row.response = response;
    },
    async release(scope: string, key: string, holder: string) {
      log.push(["release", scope, key]);
      if (rows.get(id(scope, key))?.holder === holder) rows.delete(id(scope, key));
    },
    async addPrepaid(scope: string, key: string, _fingerprint: string, payment: { payer: string; nonce: string }) {
      log.push(["addPrepaid", scope, key, payment.nonce]);
      prepaid.set(id(scope, key), payment);
    },
    async takePrepaid(scope: string, key: string) {
      const p = prepaid.get(id(scope, key));
      prepaid.delete(id(scope, key));
      return p;
    },
  };
  return store;
}

/** a verified, locked payment whose settlement answers `settles` (true, false, or an error thrown) */
export function fakeClaim(log: CallLog, settles: boolean | Error = true, nonce = "0xaa") {
  return {
    payer: "0x1111111111111111111111111111111111111111" as const,
    nonce,
    treasuryId: "trs_paid",
    settle: async () => {
      log.push(["settle", nonce]);
      if (settles instanceof Error) throw settles;
      return settles;
    },
    release: async () => void log.push(["releasePayment", nonce]),
    outcome: async (status: number) => void log.push(["outcome", nonce, status]),
    renew: async () => true,
  };
}
