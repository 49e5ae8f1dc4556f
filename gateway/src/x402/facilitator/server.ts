/** HTTP face of the local facilitator: POST /verify, POST /settle, GET /supported (x402 wire format, versions 1 and 2). */
import { createHash, timingSafeEqual } from "node:crypto";
import express, { type Express } from "express";
import { z } from "zod";
import type { LocalFacilitator } from "./local-facilitator";
import type { AnyPayment, AnyRequirements } from "./payment-versions";

const BodyV1 = z.object({
  x402Version: z.literal(1),
  paymentPayload: z.object({ x402Version: z.literal(1), scheme: z.string(), network: z.string(), payload: z.record(z.string(), z.unknown()) }).passthrough(),
  paymentRequirements: z
    .object({
      scheme: z.string(),
      network: z.string(),
      maxAmountRequired: z.string(),
      resource: z.string(),
      payTo: z.string(),
      asset: z.string(),
      maxTimeoutSeconds: z.number(),
    })
    .passthrough(),
});
const RequirementsV2 = z
  .object({
    scheme: z.string(),
    network: z.string(),
    amount: z.string(),
    asset: z.string(),
    payTo: z.string(),
    maxTimeoutSeconds: z.number(),
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough();
const BodyV2 = z.object({
  x402Version: z.literal(2),
  paymentPayload: z.object({ x402Version: z.literal(2), accepted: RequirementsV2, payload: z.record(z.string(), z.unknown()) }).passthrough(),
  paymentRequirements: RequirementsV2,
});
const Body = z.union([BodyV1, BodyV2]);

/**
 * With an API key, every call must carry it as a bearer token (compared in constant time): the facilitator
 * moves money and signs claims for the gateway, so nobody else may ask it to (a payer settling its own
 * authorization for less, say). Without one it answers anyone who can reach it (tests, a loopback-only host).
 */
export function facilitatorApp(facilitator: LocalFacilitator, opts: { apiKey?: string } = {}): Express {
  const app = express();
  app.disable("x-powered-by");
  if (opts.apiKey) {
    const expected = createHash("sha256").update(opts.apiKey).digest();
    app.use((req, res, next) => {
      const sent = /^Bearer (.+)$/.exec(req.header("authorization") ?? "")?.[1] ?? "";
      if (timingSafeEqual(createHash("sha256").update(sent).digest(), expected)) return next();
      res.status(401).json({ error: "unauthorized", message: "this facilitator answers its gateway only (Authorization: Bearer <FACILITATOR_API_KEY>)" });
    });
  }
  app.use(express.json({ limit: "32kb" }));
  const parse = (body: unknown) => {
    const r = Body.safeParse(body);
    if (!r.success) return { error: r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
    return {
      payment: r.data.paymentPayload as unknown as AnyPayment,
      requirements: r.data.paymentRequirements as unknown as AnyRequirements,
      version: r.data.x402Version,
    };
  };
  app.get("/supported", (_req, res) => {
    res.json(facilitator.supported());
  });
  app.post("/verify", async (req, res) => {
    const p = parse(req.body);
    if ("error" in p) return void res.status(400).json({ isValid: false, invalidReason: "invalid_request", error: p.error });
    res.json(await facilitator.verify(p.payment, p.requirements));
  });
  app.post("/settle", async (req, res) => {
    const p = parse(req.body);
    if ("error" in p)
      return void res.status(400).json({
        success: false,
        errorReason: "invalid_request",
        error: p.error,
        transaction: "",
        network: (req.body as { x402Version?: unknown })?.x402Version === 2 ? "eip155:84532" : "base-sepolia",
      });
    res.json(await facilitator.settle(p.payment, p.requirements));
  });
  app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(400).json({ error: "invalid_request", message: err instanceof Error ? err.message : String(err) });
  });
  return app;
}
