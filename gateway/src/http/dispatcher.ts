/**
 * Where a declared route's handler is found. A path without parameters is
 * looked up in a map (one lookup by method and path) before Express's
 * router, which otherwise tests each of the API's ~50 routes in turn
 * (Express's `next`/`handle` were 6-9% of a public GET in the bench's
 * profile). Every route is also on the Express router, which serves what the
 * map does not: parameterized paths.
 *
 * Every router of the application matches a path exactly (ROUTER_OPTIONS): a
 * trailing slash or another letter case is another path, answered by the typed
 * 404, so a rule keyed by a route's path (the free credentials' limit, a
 * protocol path's read window) sees every request that route serves.
 */
import express, { type RequestHandler, type Router } from "express";

/** one spelling per route: case-sensitive, a trailing slash significant (Express's routers and the application's own) */
export const ROUTER_OPTIONS = { caseSensitive: true, strict: true } as const;

/** a router that matches paths exactly */
export const exactRouter = (): Router => express.Router(ROUTER_OPTIONS);

/** what a route module registers its handlers on: the dispatcher, or a plain Express router */
export interface RouteSink {
  get(path: string, handler: RequestHandler): unknown;
  post(path: string, handler: RequestHandler): unknown;
  delete(path: string, handler: RequestHandler): unknown;
}

export class RouteDispatcher implements RouteSink {
  private readonly exact = new Map<string, RequestHandler>();
  private readonly router: Router = exactRouter();

  get(path: string, handler: RequestHandler): void {
    this.add("GET", path, handler);
    this.router.get(path, handler);
  }

  post(path: string, handler: RequestHandler): void {
    this.add("POST", path, handler);
    this.router.post(path, handler);
  }

  delete(path: string, handler: RequestHandler): void {
    this.add("DELETE", path, handler);
    this.router.delete(path, handler);
  }

  private add(method: string, path: string, handler: RequestHandler): void {
    if (path.includes(":") || path.includes("*")) return;
    const key = `${method} ${path}`;
    if (this.exact.has(key)) throw new Error(`${key} is registered twice`);
    this.exact.set(key, handler);
  }

  /** the middleware that serves the registered routes (HEAD is served by a GET route, as Express does) */
  readonly handle: RequestHandler = (req, res, next) => {
    const handler = this.exact.get(`${req.method === "HEAD" ? "GET" : req.method} ${req.path}`);
    if (handler) return handler(req, res, next);
    this.router(req, res, next);
  };
}
