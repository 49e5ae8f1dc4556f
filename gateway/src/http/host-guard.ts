/**
 * DNS-rebinding guard (MCP transport security): a page on another site that
 * rebinds its name to this server's address reaches it with its own Host and
 * Origin. The MCP endpoint answers only requests whose Host is this server's
 * (the public URL's host, or a loopback name with the port the request came in
 * on, or one of MCP_ALLOWED_HOSTS) and whose Origin, when sent, is one of those
 * hosts or one of MCP_ALLOWED_ORIGINS; otherwise 403 with the typed error.
 */
import type { RequestHandler } from "express";
import { sendError } from "./errors";
import { TreasuryError } from "@treasury/core/lib/errors";

export function hostGuard(opts: { publicBaseUrl: string; allowedHosts: string[]; allowedOrigins: string[] }): RequestHandler {
  const publicHost = new URL(opts.publicBaseUrl).host.toLowerCase();
  const extraHosts = new Set(opts.allowedHosts);
  const extraOrigins = new Set(opts.allowedOrigins);
  return (req, res, next) => {
    const port = req.socket.localPort;
    const hosts = new Set([publicHost, ...extraHosts, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
    const host = (req.header("host") ?? "").toLowerCase();
    if (!hosts.has(host)) {
      return sendError(
        res,
        new TreasuryError(
          "host_not_allowed",
          `Host ${JSON.stringify(host)} is not this server's (DNS-rebinding guard); allowed: ${[...hosts].join(", ")} (MCP_ALLOWED_HOSTS adds more)`,
        ),
      );
    }
    const origin = req.header("origin");
    if (origin !== undefined) {
      let allowed = extraOrigins.has(origin.toLowerCase().replace(/\/+$/, ""));
      try {
        const u = new URL(origin);
        allowed ||= (u.protocol === "http:" || u.protocol === "https:") && hosts.has(u.host.toLowerCase());
      } catch {
        // not a URL: refused below
      }
      if (!allowed)
        return sendError(
          res,
          new TreasuryError(
            "origin_not_allowed",
            `Origin ${JSON.stringify(origin)} may not call this MCP server (DNS-rebinding guard; MCP_ALLOWED_ORIGINS adds origins)`,
          ),
        );
    }
    next();
  };
}
