/**
 * The MCP server (official @modelcontextprotocol/sdk): one McpServer and one
 * stateless Streamable HTTP transport per request, JSON responses. Tool
 * failures come back as MCP tool errors carrying the REST error body
 * (`error`, `message`, context fields such as `safe_amount`) and its HTTP status.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Request, Response } from "express";
import { z } from "../schemas/zod";
import { ApiError } from "../http/errors";
import type { Credential } from "../http/credential";
import type { ToolContext, ToolDefinition } from "./tools";

export const MCP_SERVER_NAME = "agent-treasury-gateway";

function toolResult(value: unknown): CallToolResult {
  const structured = (value && typeof value === "object" && !Array.isArray(value) ? value : { value }) as Record<string, unknown>;
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: structured };
}

function toolError(err: ApiError, requestId: string): CallToolResult {
  const body = { error: err.code, message: err.message, request_id: requestId, http_status: err.status, ...err.fields };
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

export function buildMcpServer(tools: ToolDefinition[], tc: ToolContext, version: string, log: (err: unknown) => void): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version },
    {
      capabilities: { tools: {} },
      instructions:
        "Agent treasury on Aave V3. Public tools need nothing; treasury tools need `Authorization: Bearer <sandbox or live key>` on the HTTP request " +
        "(create_sandbox_treasury returns a key). prepare_* tools return unsigned envelopes (wallet mode) that you sign locally and send with relay_signed_transaction.",
    },
  );
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.inputSchema, annotations: { title: tool.title, ...tool.annotations } },
      async (args: Record<string, unknown>) => {
        try {
          return toolResult(await tool.run(args ?? {}, tc));
        } catch (err) {
          if (err instanceof ApiError) return toolError(err, tc.requestId);
          if (err instanceof z.ZodError) {
            return toolError(new ApiError(400, "invalid_request", err.issues[0]?.message ?? "invalid arguments", { details: err.issues }), tc.requestId);
          }
          log(err);
          return toolError(new ApiError(500, "internal_error", "internal error; quote the request_id when reporting it"), tc.requestId);
        }
      },
    );
  }
  return server;
}

/** Let plain JSON-RPC clients (curl with Content-Type: application/json only) in: the answer is JSON either way. */
function acceptJsonAndStream(req: Request): void {
  const wanted = "application/json, text/event-stream";
  const accept = req.headers.accept ?? "";
  if (accept.includes("application/json") && accept.includes("text/event-stream")) return;
  req.headers.accept = wanted;
  const raw: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() !== "accept") raw.push(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  raw.push("Accept", wanted);
  (req as unknown as { rawHeaders: string[] }).rawHeaders = raw;
}

export async function handleMcpPost(
  req: Request,
  res: Response,
  tools: ToolDefinition[],
  authenticate: (req: Request, res: Response) => Promise<void> | void,
  version: string,
  log: (err: unknown) => void,
): Promise<void> {
  let resolved: { credential?: Credential; error?: ApiError } | undefined;
  const resolve = async () => {
    if (!resolved) {
      try {
        await authenticate(req, res);
        resolved = { credential: res.locals.credential as Credential };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        resolved = { error: err };
      }
    }
    return resolved;
  };
  const tc: ToolContext = {
    requestId: res.locals.requestId as string,
    credential: async () => {
      const r = await resolve();
      if (r.error) throw r.error;
      return r.credential!;
    },
    optionalCredential: async () => {
      if (!req.header("authorization")) return undefined;
      const r = await resolve();
      if (r.error) throw r.error;
      return r.credential;
    },
  };
  const server = buildMcpServer(tools, tc, version, log);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  acceptJsonAndStream(req);
  await server.connect(transport);
  await transport.handleRequest(req, res, nullIdAsRequest(req.body, res));
}

/**
 * The spec allows a request `id` of null (4.2); the SDK's transport takes only
 * strings and numbers. Such a request runs under a placeholder id whose JSON
 * has the length of `null`, and the answer's bytes carry `null` in its place
 * (the same length: headers already written stay true).
 */
const NULL_ID_PLACEHOLDER = -917;
const PLACED = `"id":${NULL_ID_PLACEHOLDER}`;
function nullIdAsRequest(body: unknown, res: Response): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body) || (body as { id?: unknown }).id !== null) return body;
  const swap = (chunk: unknown): unknown => {
    if (typeof chunk === "string") return chunk.includes(PLACED) ? chunk.replace(PLACED, '"id":null') : chunk;
    if (chunk instanceof Uint8Array) {
      const text = Buffer.from(chunk).toString("utf8");
      return text.includes(PLACED) ? Buffer.from(text.replace(PLACED, '"id":null'), "utf8") : chunk;
    }
    return chunk;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((chunk: unknown, ...rest: unknown[]) => write(swap(chunk), ...rest)) as Response["write"];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => end(swap(chunk), ...rest)) as Response["end"];
  return { ...(body as object), id: NULL_ID_PLACEHOLDER };
}
