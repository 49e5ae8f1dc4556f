/**
 * The interactive API reference at /docs: Swagger UI from the local
 * swagger-ui-dist package (no CDN), rendering /openapi.json.
 */
import express, { type Router } from "express";
import { exactRouter } from "./dispatcher";
import { getAbsoluteFSPath } from "swagger-ui-dist";

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Agent Treasury Gateway - API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, tryItOutEnabled: false });`;

export function docsRouter(): Router {
  const router = exactRouter();
  router.get(["/docs", "/docs/"], (_req, res) => {
    res.type("html").send(PAGE);
  });
  router.get("/docs/init.js", (_req, res) => {
    res.type("application/javascript").send(INIT);
  });
  router.use("/docs/assets", express.static(getAbsoluteFSPath(), { index: false, fallthrough: true }));
  return router;
}
