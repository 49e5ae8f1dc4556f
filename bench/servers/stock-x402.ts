/**
 * The stock anchor of the paid path: x402-express's own paymentMiddleware
 * (v1) on GET /api/v1/health at the gateway's price for that route, with the
 * same facilitator (STOCK_FACILITATOR_URL) and the same asset and payee, in
 * its own process. Its handler answers a fixed body: what it measures is the
 * payment path (verify, then settle after the handler) and Express.
 * Prints {"url": ...} when listening.
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { paymentMiddleware } from "x402-express";
import { X402_ASSET } from "../../gateway/src/x402/asset";

const facilitatorUrl = process.env.STOCK_FACILITATOR_URL as `${string}://${string}`;
const payTo = process.env.STOCK_PAY_TO as `0x${string}`;
const amount = process.env.STOCK_PRICE_ATOMIC ?? "1000";

const app = express();
app.use(
  paymentMiddleware(
    payTo,
    {
      "GET /api/v1/health": {
        price: { amount, asset: { address: X402_ASSET.address, decimals: 6, eip712: { name: X402_ASSET.name, version: X402_ASSET.version } } },
        network: "base-sepolia",
        config: { description: "Treasury health score, LTV and zones", mimeType: "application/json", maxTimeoutSeconds: 60 },
      },
    },
    { url: facilitatorUrl },
  ),
);
app.get("/api/v1/health", (_req, res) => {
  res.json({ object: "health", health_score: 2.1 });
});
const server = app.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
