/**
 * The reviewer's admin API. Off (404) unless ADMIN_TOKEN is configured;
 * every call needs `Authorization: Bearer <ADMIN_TOKEN>`. Not part of the
 * public OpenAPI document.
 */
import type { RequestHandler } from "express";
import { TreasuryError } from "@treasury/core/lib/errors";
import { safeEqual } from "../lib/secrets";
import { AccessRequestIdParams, ReviewTransitionBody } from "../schemas/agents";
import { z } from "@treasury/core/schemas/zod";
import type { AccessRequestService } from "../services/access-request-service";
import type { Runtime } from "../services/context";
import type { RouteKit } from "./kit";

export function adminGuard(ctx: Runtime): RequestHandler {
  return (req, _res, next) => {
    const token = ctx.config.adminToken;
    if (!token) return next(new TreasuryError("not_found", `no route for ${req.method} ${req.path}`));
    const header = req.header("authorization") ?? "";
    const presented = header.startsWith("Bearer ") ? header.slice(7) : "";
    if (!presented || !safeEqual(presented, token)) return next(new TreasuryError("unauthorized", "admin token missing or invalid"));
    next();
  };
}

export function adminRoutes(kit: RouteKit, access: AccessRequestService): void {
  const common = { tags: ["Admin"], security: "admin" as const, internal: true };
  const anyBody = { description: "ok" };

  kit.route({
    ...common,
    method: "get",
    path: "/admin/access-requests",
    operationId: "adminListAccessRequests",
    summary: "List access requests",
    request: { query: z.object({ status: z.enum(["received", "in_review", "closed"]).optional() }) },
    responses: { 200: anyBody },
    handler: async ({ query }) => ({
      status: 200,
      body: { object: "list", data: await access.adminList(query.status) },
    }),
  });

  kit.route({
    ...common,
    method: "post",
    path: "/admin/access-requests/:id/review",
    operationId: "adminStartReview",
    summary: "received -> in_review",
    request: { params: AccessRequestIdParams, body: ReviewTransitionBody.pick({ reviewer: true }) },
    responses: { 200: anyBody },
    handler: async ({ params, body }) => ({ status: 200, body: await access.startReview(params.id, body.reviewer) }),
  });

  kit.route({
    ...common,
    method: "post",
    path: "/admin/access-requests/:id/close",
    operationId: "adminCloseRequest",
    summary: "in_review -> closed, with the outcome; approval issues a live key to the outbox",
    request: { params: AccessRequestIdParams, body: ReviewTransitionBody.required({ outcome: true }) },
    responses: { 200: anyBody },
    handler: async ({ params, body }) => ({ status: 200, body: await access.close(params.id, body.reviewer, body.outcome, body.note, body.treasury_id) }),
  });

  kit.route({
    ...common,
    method: "get",
    path: "/admin/outbox",
    operationId: "adminOutbox",
    summary: "Pending messages to operators (a delivery worker sends them)",
    responses: { 200: anyBody },
    handler: async () => ({ status: 200, body: { object: "list", data: await access.pendingMessages() }, headers: { "Cache-Control": "no-store" } }),
  });

  kit.route({
    ...common,
    method: "post",
    path: "/admin/outbox/:id/delivered",
    operationId: "adminOutboxDelivered",
    summary: "Mark a message delivered; its body (which may hold a key) is erased",
    request: { params: z.object({ id: z.string().regex(/^msg_[0-9a-f]{32}$/) }), bodyRequired: false, body: z.strictObject({}) },
    responses: { 200: anyBody },
    handler: async ({ params }) => {
      await access.markDelivered(params.id);
      return { status: 200, body: { id: params.id, delivered: true } };
    },
  });
}
