/**
 * "A new action is one file and a line" (docs/ARCHITECTURE.md, "Where a new thing goes"), held: a declaration
 * this file alone states (`park`, which supplies USDC to Aave as a deposit does, under its own route, price,
 * ids, receipt and command line), registered as one more line of the registry (`registerAction`, the
 * equivalent of its line in `BUILT_IN`), is on REST, in the OpenAPI document, an MCP tool, on the ledger (its
 * receipt, the fee audit, a receipt read again) and in the signer agent's rules and command line, with no
 * other file touched. The gateway and the signer agent derive all of it when they load, so they are imported
 * after the registration.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAction, TREASURY_ACTIONS } from "@treasury/core/actions";
import type { ActionDeclaration } from "@treasury/core/actions/declaration";
import { deposit } from "@treasury/core/actions/deposit";
import { parseUsdc, usdcToNumber } from "@treasury/core/domain/money";

/** the whole of the new action: its declaration */
const park: ActionDeclaration<"park"> = {
  ...deposit,
  name: "park",
  idPrefix: "prk",
  receiptId: "parking_id",
  minimumMicro: undefined,
  route: {
    path: "/api/v1/parkings",
    operationId: "createParking",
    summary: "Park USDC on Aave (2% entry fee)",
    toolDescription: "Park USDC: supplied to Aave as a deposit is. Wallet-mode treasuries get an unsigned envelope; managed ones execute in simulation.",
    example: { amount_usdc: 250 },
    price: { atomic: 47_123n, description: "Prepare or execute a parking" },
  },
  receipt: ({ id, amountMicro, fee }) => ({ parking_id: id, parked_usdc: usdcToNumber(amountMicro - fee.feeMicro), fee_basis: fee.basis }),
  cli: { usage: "park <amount_usdc>", body: (amount) => ({ amount_usdc: amount }) },
};
registerAction(park);

const { call, startTestGateway } = await import("../helpers/gateway");
const { ResponseValidator } = await import("../helpers/openapi");
const { authed, newIdempotencyKey, sandboxTenant } = await import("../helpers/treasury");
const { planSteps } = await import("@treasury/core/chain/envelope-plan");
const { checkIntent, defaultPolicy, PolicyRefusal } = await import("../../signer-agent/src/policy");
const { ACTION_USAGES, actionLines, isTreasuryAction } = await import("../../signer-agent/src/cli/actions");

let gw: Awaited<ReturnType<typeof startTestGateway>>;
let openapi: any;

beforeAll(async () => {
  gw = await startTestGateway();
  openapi = (await call(gw.url, "GET", "/openapi.json")).body;
});
afterAll(() => gw?.close());

describe("a declaration-only action", () => {
  it("is registered once: a second registration of the name is refused", () => {
    expect(TREASURY_ACTIONS.at(-1)).toBe("park");
    expect(() => registerAction(park)).toThrow("the action park is already declared");
  });

  it("is a REST route whose receipt, fee audit and receipt read again carry its own id, and its schema is in the OpenAPI document", async () => {
    const op = openapi.paths["/api/v1/parkings"].post;
    expect(op.operationId).toBe("createParking");
    expect(op.summary).toBe("Park USDC on Aave (2% entry fee)");
    expect(openapi.components.schemas.ActionReceipt.properties.parking_id).toEqual({ type: "string", pattern: "^prk_" });
    expect(openapi.components.schemas.EstimateRequest.properties.action.enum).toContain("park");

    const t = await sandboxTenant(gw.url);
    const api = authed(gw.url, t.key);
    const parked = await api.post("/api/v1/parkings", { amount_usdc: 250 });
    expect(parked.status).toBe(200);
    new ResponseValidator(openapi).check("POST", "/api/v1/parkings", parked.status, parked.body);
    expect(parked.body).toMatchObject({
      object: "action_receipt",
      action: "park",
      amount_usdc: 250,
      fee_usdc: 5,
      parked_usdc: 245,
      fee_basis: "2% of the amount when funds enter the service",
    });
    expect(parked.body.parking_id).toMatch(/^prk_[0-9a-f]{32}$/);

    const audit = await api.get("/api/v1/audit");
    expect(audit.body.data.map((e: any) => [e.action, e.fee_usdc, e.fee_bearing, e.execution_ref])).toEqual([["park", 5, true, parked.body.parking_id]]);
    const again = await api.get(`/api/v1/receipts/${parked.body.parking_id}`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ action: "park", parking_id: parked.body.parking_id, parked_usdc: 245 });

    // its estimate: the common fields, none of another action's (no borrow rate, no target)
    const estimate = await api.post("/api/v1/estimate", { action: "park", amount_usdc: 250 });
    expect(estimate.status).toBe(200);
    expect(estimate.body).toMatchObject({ object: "action_preview", action: "park", amount_usdc: 250, service_fee_usdc: 5, net_amount: 245, aave_rate: null });
    expect(estimate.body.target).toBeUndefined();

    // its x402 price: the 402 of an unauthenticated call names it
    const unpaid = await call(gw.url, "POST", "/api/v1/parkings", { body: { amount_usdc: 250 }, headers: { "idempotency-key": newIdempotencyKey() } });
    expect(unpaid.status).toBe(402);
    expect(JSON.stringify(unpaid.body)).toContain('"47123"');
  });

  it("is an MCP tool that executes as its REST twin does", async () => {
    const t = await sandboxTenant(gw.url);
    const client = new Client({ name: "recipe-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.key}` } } }));
    const tools = (await client.listTools()).tools;
    const tool = tools.find((x) => x.name === "prepare_park")!;
    expect(tool.description).toContain("Park USDC: supplied to Aave as a deposit is.");
    const r = await client.callTool({ name: "prepare_park", arguments: { amount_usdc: 300, idempotency_key: newIdempotencyKey() } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ action: "park", amount_usdc: 300, fee_usdc: 6, parked_usdc: 294, http_status: 200 });
    await client.close();
  });

  it("is in the signer agent's rules and command line", () => {
    expect(isTreasuryAction("park")).toBe(true);
    expect(ACTION_USAGES.find((u) => (u.name as string) === "park")).toMatchObject({
      usage: "park <amount_usdc>",
      amount: "amount_usdc",
      flags: [],
      example: "park 250",
    });
    expect(actionLines("signer-agent run").join("\n")).toContain("e.g. signer-agent run park 250");

    const self = privateKeyToAccount(generatePrivateKey()).address;
    const fee = "0x000000000000000000000000000000000000fee5" as const;
    const amountMicro = parseUsdc(250);
    const envelopeOf = (supplied: bigint) => ({
      action: "park",
      steps: planSteps({ action: "park" as never, chain: "base", wallet: self, amountMicro: supplied, feeMicro: 5_000_000n, feeRecipient: fee }).map((s) => ({
        unsigned_transaction: { chain_id: 8453, to: s.to, data: s.data, value: "0" },
      })),
    });
    const policy = defaultPolicy([fee]);
    expect(policy.allowed_functions).toEqual(expect.arrayContaining(["transfer", "approve", "supply"]));
    const intent = { action: "park" as never, amountMicro, swapFloors: [] };
    expect(checkIntent(intent, envelopeOf(amountMicro), self, policy).map((c) => c.role)).toEqual(["fee", "approve", "supply"]);
    // an envelope that supplies one unit more than asked is refused by the declaration's own rule
    expect(() => checkIntent(intent, envelopeOf(amountMicro + 1n), self, policy)).toThrow(PolicyRefusal);
  });
});
