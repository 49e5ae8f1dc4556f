/** The OpenAPI 3.1.0 document, generated from the registry the routes filled. */
import { OpenApiGeneratorV31, type OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import { EVENT_TYPE_NAMES, EVENT_TYPES, eventSchemaOf } from "@treasury/core/schemas/events";
import { API_VERSION } from "../schemas/api-version";

/** the `webhooks` object: one entry per event type, the POST a webhook endpoint receives (routes/events.ts) */
function registerEventWebhooks(registry: OpenAPIRegistry): void {
  for (const type of EVENT_TYPE_NAMES) {
    registry.registerWebhook({
      method: "post",
      path: type,
      operationId: `event_${type.replace(/\./g, "_")}`,
      summary: EVENT_TYPES[type].summary,
      description:
        "Delivered to the treasury's webhook endpoints that take this type, signed as Standard Webhooks specifies: `webhook-id` (the event id: deduplicate on it), `webhook-timestamp` (Unix seconds), `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint's secret). Answer 2xx to acknowledge; anything else is retried.",
      tags: ["Events"],
      request: { body: { content: { "application/json": { schema: eventSchemaOf(type) } } } },
      responses: { 200: { description: "any 2xx acknowledges the delivery" } },
    });
  }
}

export function buildOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  registry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "Treasury API key: sk_test_ (sandbox) or sk_live_ (live).",
  });
  registry.registerComponent("securitySchemes", "x402Payment", {
    type: "apiKey",
    in: "header",
    name: "X-PAYMENT",
    description: "x402 version 1 payment proof (base64), for wallet-sovereign agents paying per request.",
  });
  registry.registerComponent("securitySchemes", "x402PaymentV2", {
    type: "apiKey",
    in: "header",
    name: "PAYMENT-SIGNATURE",
    description: "x402 version 2 payment proof (base64 of the PaymentPayload: x402Version 2, accepted, payload, resource), answered with PAYMENT-RESPONSE.",
  });
  registry.registerComponent("securitySchemes", "signInWithX", {
    type: "apiKey",
    in: "header",
    name: "SIGN-IN-WITH-X",
    description:
      "x402's sign-in-with-x, free, on the operations whose security lists it: the downward legs and the reads of the wallet's own treasury (so what it paid for is never paid for again). Base64 JSON of an EIP-4361 message signed by the wallet (EIP-191; a Safe by EIP-1271), naming this service's host, the route's URL, a treasury chain (eip155:8453 or eip155:42161), a fresh issuedAt, a nonce used once, and in its resources urn:x402:request:<sha256 of the method, the path with its query, the Idempotency-Key and the JSON body (null for a GET)>: a signature for another route, host or request, or sent twice, is refused (401). It opens only the treasury the wallet stands behind on that chain: one registered with the wallet's signed ownership proof, else the one its own x402 payment created; a registration without proof never counts, and another treasury's receipt is not found. A priced route's 402 offers it in extensions['sign-in-with-x'] beside the payment, bound to that request; a key-only route's 401 carries the challenge. Rate limits count it as a payer's: the signer's own bucket once the signature and its treasury are proven, else the client address's write window.",
  });
  registry.registerComponent("securitySchemes", "adminToken", { type: "http", scheme: "bearer", description: "reviewer admin token" });
  registerEventWebhooks(registry);
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Agent Treasury Gateway",
      version: API_VERSION,
      description:
        "Treasury layer for agents holding BTC, ETH and USDC on Aave V3. Every error body is `{ error, message, request_id }`; " +
        "rate limits are reported in X-RateLimit-Remaining and X-RateLimit-Reset on every response.",
    },
    servers: [{ url: serverUrl }],
    tags: [
      { name: "Discovery" },
      { name: "Public" },
      { name: "Sandbox" },
      { name: "Treasuries" },
      { name: "Actions" },
      { name: "Reads" },
      { name: "Wallet loop" },
      { name: "Live access" },
      { name: "MCP" },
      { name: "Managed" },
      { name: "Events" },
    ],
  });
}
