/**
 * A scripted JSON-over-HTTP server for the HTTP clients' tests (the chain
 * transport, the facilitator client): every request is recorded as it came,
 * and answered with what the test says next (a status, a content type and a
 * body), or not at all ("hang").
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  method: string;
  url: string;
  contentType: string | undefined;
  auth: string | undefined;
  body: any;
}

export type ScriptedAnswer = ((body: any, url: string) => { status: number; type?: string; body: string } | "hang") | "hang";

export interface ScriptedServer {
  url: string;
  /** the requests so far, in order (a test empties it with `seen.length = 0`) */
  seen: SeenRequest[];
  /** how the next requests are answered */
  answer: ScriptedAnswer;
  close(): void;
}

export async function startScriptedServer(answer: ScriptedAnswer = () => ({ status: 200, body: "{}" })): Promise<ScriptedServer> {
  const scripted = { seen: [] as SeenRequest[], answer } as ScriptedServer;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      scripted.seen.push({ method: req.method!, url: req.url!, contentType: req.headers["content-type"], auth: req.headers.authorization, body });
      const next = scripted.answer;
      if (next === "hang") return;
      const a = next(body, req.url!);
      if (a === "hang") return;
      res.writeHead(a.status, { "content-type": a.type ?? "application/json" });
      res.end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  scripted.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  scripted.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return scripted;
}
