/**
 * Whether a chain takes the sandbox's test methods: asked of a loopback node once (`web3_clientVersion`),
 * and the answer kept; a node that did not answer is asked again. A scripted JSON-RPC server plays the node.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedServer, type ScriptedServer } from "../../../test/helpers/scripted-server";
import { ChainGateway } from "./chain-gateway";
import { SandboxChain } from "./sandbox-chain";

let node: ScriptedServer;
beforeAll(async () => {
  node = await startScriptedServer();
});
afterAll(() => node.close());

const clientVersion = (version: string) => (body: { id: number; method: string }) => ({
  status: 200,
  body: JSON.stringify({ jsonrpc: "2.0", id: body.id, result: body.method === "web3_clientVersion" ? version : null }),
});
const versionAsks = () => node.seen.filter((r) => r.body?.method === "web3_clientVersion").length;

describe("SandboxChain.active", () => {
  it.each([
    ["Geth/v1.14.0-stable/linux-amd64/go1.22", false],
    ["anvil/v1.3.5", true],
  ])("a loopback node answering %s is asked once, not on every call (each status, each action): the sandbox's = %s", async (version, sandbox) => {
    node.seen.length = 0;
    node.answer = clientVersion(version);
    const chain = new SandboxChain(new ChainGateway({ base: node.url }, 5_000), "auto", []);
    for (let i = 0; i < 5; i++) expect(await chain.active("base")).toBe(sandbox);
    expect(versionAsks()).toBe(1);
  });

  it("a node that did not answer is asked again next time", async () => {
    node.seen.length = 0;
    node.answer = () => ({ status: 503, type: "text/plain", body: "starting" });
    const sandbox = new SandboxChain(new ChainGateway({ base: node.url }, 5_000), "auto", []);
    expect(await sandbox.active("base")).toBe(false);
    node.answer = clientVersion("anvil/v1.3.5");
    expect(await sandbox.active("base")).toBe(true);
    expect(versionAsks()).toBe(2);
  });

  it("the sandbox switched off, a live chain or a chain without an RPC never asks", async () => {
    node.seen.length = 0;
    node.answer = clientVersion("anvil/v1.3.5");
    expect(await new SandboxChain(new ChainGateway({ base: node.url }, 5_000), "off", []).active("base")).toBe(false);
    expect(await new SandboxChain(new ChainGateway({ base: node.url }, 5_000), "auto", ["base"]).active("base")).toBe(false);
    expect(await new SandboxChain(new ChainGateway({}, 5_000), "auto", []).active("base")).toBe(false);
    expect(versionAsks()).toBe(0);
  });
});
