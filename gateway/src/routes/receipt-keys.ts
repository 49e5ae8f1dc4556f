/**
 * GET /.well-known/x402-receipt-keys.json: the public keys (a JWKS) that sign this service's x402 offers and
 * receipts (x402/receipts/receipt-key.ts). A paying agent pins the key from here and checks each receipt's
 * signature against it (a receipt's did:jwk kid alone proves only "signed by the key in kid").
 */
import { z } from "@treasury/core/schemas/zod";
import { publishedReceiptKeys, RECEIPT_JWS_ALGORITHM, RECEIPT_KEYS_PATH, type ReceiptSigningKey } from "../x402/receipts/receipt-key";
import { RATE_LIMITED, type RouteKit } from "./kit";

export const ReceiptKeySet = z
  .object({
    keys: z.array(
      z.object({
        kty: z.literal("OKP"),
        crv: z.literal("Ed25519"),
        x: z.string().openapi({ description: "the public key, base64url (RFC 8037)" }),
        kid: z.string().openapi({ description: "the JWS `kid` of the offers and receipts it signs: a did:jwk DID URL of this key" }),
        alg: z.literal(RECEIPT_JWS_ALGORITHM),
        use: z.literal("sig"),
      }),
    ),
  })
  .openapi("X402ReceiptKeySet");

export function receiptKeyRoutes(kit: RouteKit, keys: readonly ReceiptSigningKey[]): void {
  const document = publishedReceiptKeys(keys);
  kit.route({
    method: "get",
    path: RECEIPT_KEYS_PATH,
    operationId: "getX402ReceiptKeys",
    summary: "The keys that sign x402 offers and receipts (JWKS)",
    description:
      'Every 402 carries signed offers and every paid answer a signed receipt (x402\'s offer-receipt extension, JWS EdDSA), in `extensions["offer-receipt"]` of the PAYMENT-REQUIRED / PAYMENT-RESPONSE (v1: X-PAYMENT-RESPONSE) objects, or of an MCP call\'s `_meta["x402/payment-response"]`. The receipt binds the payment to the request (method, path, a digest of the body or the tool\'s arguments) and to a digest of the answer. This is the key set to verify them with: the current key first.',
    tags: ["Discovery"],
    extension: true,
    responses: { 200: { description: "the receipt keys", schema: ReceiptKeySet }, ...RATE_LIMITED },
    handler: () => ({ status: 200, body: document }),
  });
}
