/** The registered routes: which methods exist per path (so an unsupported one answers 405), every declaration, and those serving an MCP tool. */
import type { AnyRouteSpec } from "./route-spec";

export class RouteTable {
  private readonly methods = new Map<string, Set<string>>();
  private readonly tooled: AnyRouteSpec[] = [];
  private readonly specs = new Map<string, AnyRouteSpec>();

  /** the declarations of the routes that serve an MCP tool, in registration order */
  toolRoutes(): readonly AnyRouteSpec[] {
    return this.tooled;
  }
  addTool(spec: AnyRouteSpec): void {
    if (this.tooled.some((t) => t.tool!.name === spec.tool!.name)) throw new Error(`MCP tool ${spec.tool!.name} is declared twice`);
    this.tooled.push(spec);
  }
  /** a registered route's declaration */
  routeOf(method: string, path: string): AnyRouteSpec | undefined {
    return this.specs.get(`${method.toUpperCase()} ${path}`);
  }
  declare(spec: AnyRouteSpec): void {
    this.specs.set(`${spec.method.toUpperCase()} ${spec.path}`, spec);
  }
  add(path: string, method: string): void {
    const set = this.methods.get(path) ?? new Set<string>();
    set.add(method.toUpperCase());
    if (method === "get") set.add("HEAD");
    this.methods.set(path, set);
  }
  entries(): [string, string[]][] {
    return [...this.methods.entries()].map(([p, m]) => [p, [...m].sort()]);
  }
}
