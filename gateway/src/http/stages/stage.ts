/**
 * A request's way through its route is a list of named stages (pipeline.ts lists them in order). A stage
 * does its part and hands the request on with `next()`, or answers it and stops; one that does not
 * concern this request hands it on untouched. What the stages learn about the request travels in its
 * `RequestState` (the x402 proof as read once, whether the request pays, the verified payment).
 */
import type { Request, Response } from "express";
import type { ErrorCode } from "@treasury/core/lib/errors";
import { newHolder } from "../../store/lease";
import type { PaymentAnswer, SentPayment } from "../../x402/payment-gate";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import { sentPaymentOf } from "../sent-payment";

/** a verified, locked payment as the paid stages use it: settled (its headers written, or its 402), or released */
export interface PaidClaim {
  payer: `0x${string}`;
  nonce: string;
  treasuryId: string;
  /** move the money; on a refusal its 402 is written, the payment's credential gone, and false returned */
  settle(used?: bigint, answered?: number): Promise<boolean>;
  release(): Promise<void>;
  outcome(status: number): Promise<void>;
  renew(): Promise<unknown>;
}

export interface RequestState {
  readonly req: Request;
  readonly res: Response;
  readonly spec: AnyRouteSpec;
  readonly hooks: RouteHooks;
  readonly now: () => Date;
  /** the request pays with x402 (authenticate decides): the payment stages serve it */
  paying: boolean;
  /** the x402 proof the request sent, read once on first use (http/sent-payment.ts), or undefined */
  readonly sentPayment: SentPayment | undefined;
  /** its verified, locked payment (authorize-payment), to settle or release */
  payment?: PaidClaim;
}

export type Next = () => Promise<void>;

export interface RequestStage {
  readonly name: string;
  /** whether the stage is on the way of a route so declared (decided once, when the route is registered) */
  takesPart(spec: AnyRouteSpec): boolean;
  /** the codes the stage itself may answer with on such a route (its OpenAPI operation lists them) */
  errors(spec: AnyRouteSpec): readonly ErrorCode[];
  run(state: RequestState, next: Next): Promise<void>;
}

/** a fresh request's state */
export const requestState = (req: Request, res: Response, spec: AnyRouteSpec, hooks: RouteHooks): RequestState => ({
  req,
  res,
  spec,
  hooks,
  now: hooks.now ?? (() => new Date()),
  paying: false,
  get sentPayment() {
    return sentPaymentOf(req, hooks.payments);
  },
});

/** an x402 answer (a 402) written: its headers, its status, its body with the request's id */
export function writeAnswer(res: Response, answer: PaymentAnswer): void {
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.status(answer.status).json({ ...answer.body, request_id: res.locals.requestId });
}

/** who holds a claimed slot: generated here, once per request (never the client's X-Request-Id) */
export const holderOf = (res: Response): string => (res.locals.slotHolder ??= newHolder("slot")) as string;

/** the x402 route of a request: its method and declared path, as the price list names it */
export const paidRoute = (spec: AnyRouteSpec) => ({ method: spec.method.toUpperCase(), path: spec.path });

/** does the route take x402 (bearer or x402: the payment stages are on its way) */
export const takesPayment = (spec: AnyRouteSpec): boolean => spec.security === "bearer_or_x402";
