/** The OpenAPI 3.1.0 document, generated from the registry the routes filled. */
import { OpenApiGeneratorV31, type OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import { API_VERSION } from "../schemas/api-version";

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
      "x402's sign-in-with-x on the downward legs (repay, withdraw, sell, exit), free: base64 JSON of an EIP-4361 message signed by the treasury's wallet (EIP-191; a Safe by EIP-1271), naming this service's host, the route's URL, a treasury chain (eip155:8453 or eip155:42161), a fresh issuedAt, a nonce used once, and in its resources urn:x402:request:<sha256 of the method, the path, the Idempotency-Key and the JSON body>. The route's 402 offers it in extensions['sign-in-with-x'], bound to that request.",
  });
  registry.registerComponent("securitySchemes", "adminToken", { type: "http", scheme: "bearer", description: "reviewer admin token" });
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
    ],
  });
}
