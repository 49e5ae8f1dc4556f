/** The baseline: a bare Express hello-world in its own process. Prints {"url": ...} when listening. */
import type { AddressInfo } from "node:net";
import express from "express";

const app = express();
app.get("/", (_req, res) => {
  res.json({ hello: "world" });
});
const server = app.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
