/** A declaration that contradicts itself is refused before anything of it is registered. */
import { isErrorCode } from "@treasury/core/lib/errors";
import { HTTP_STATUS } from "../errors";
import type { AnyRouteSpec, RouteHooks } from "../route-spec";
import { operationResponses } from "./openapi-operation";

export function checkDeclaration(spec: AnyRouteSpec, hooks: RouteHooks): void {
  const route = `${spec.method.toUpperCase()} ${spec.path}`;
  if (spec.security === "bearer_or_x402" && !spec.price) throw new Error(`${route} accepts x402 but declares no price: add one, or declare it bearer-only`);
  if (spec.price && spec.method === "delete") throw new Error(`${route} declares a price: x402 prices GET and POST routes only`);
  if (spec.price && spec.security !== "bearer_or_x402") throw new Error(`${route} declares a price but does not accept x402 (security bearer_or_x402)`);
  if (spec.idempotencyKey && !hooks.idempotency) throw new Error(`${spec.path} needs the idempotency store`);
  if (spec.storeOnly && !(spec.idempotencyKey && hooks.transaction))
    throw new Error(`${route} declares storeOnly: it needs an Idempotency-Key and the database's transactions`);
  const documented = operationResponses(spec);
  for (const code of spec.errors ?? []) {
    if (!isErrorCode(code)) throw new Error(`${route} declares the error ${String(code)}, which is not an error code (lib/errors.ts)`);
    if (!documented[HTTP_STATUS[code]]) throw new Error(`${route} declares the error ${code} but documents no ${HTTP_STATUS[code]} response`);
  }
}
