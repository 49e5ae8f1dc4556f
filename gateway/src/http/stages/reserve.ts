/**
 * Reserve, run, release: the route's `reserve` (every check the request must pass, and the claim of the
 * treasury's conflict slot, under this request's holder) around its handler; the slot is released once
 * the handler is done, whatever it answered. A route without `reserve` just runs its handler.
 */
import type { HandlerResult } from "../route-spec";
import type { RequestState } from "./stage";
import { holderOf } from "./stage";
import { handlerContext } from "./validate";

/** the body of every unpaid call: validate, reserve, handle, release */
export async function runReserved({ spec, req, res }: Pick<RequestState, "spec" | "req" | "res">): Promise<HandlerResult> {
  const c = handlerContext(spec, req, res);
  if (!spec.reserve) return spec.handler(c);
  const release = await spec.reserve(c, holderOf(res));
  try {
    return await spec.handler(c);
  } finally {
    await release();
  }
}
