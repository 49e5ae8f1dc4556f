/**
 * The console at /console in Debian's headless Chromium (issue 15), against a
 * real gateway on the Base fork with the protection engine and the Safe
 * executor: a reviewer closes an access request and the operator's outbox
 * receives the live key; an operator signs in with the Safe owner's wallet
 * (an EIP-1193 provider injected into the page, backed by a local key),
 * approves delegation (a Safe transaction the wallet signs and sends), signs
 * a pending deposit that then executes on the fork, watches a protection
 * action appear after the price falls, with the chart back at the park line,
 * and revokes. Screenshots of each screen go to test-results/console/.
 * Skipped (with how to enable it) only on a machine without Chromium outside CI.
 */
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { createWalletClient, http, publicActions, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBaseFork, type BaseForkNode } from "../../fixtures/base-fork";
import { ProtectionEngine } from "../../gateway/src/protection/engine";
import { SafeExecutor } from "../../gateway/src/protection/safe-executor";
import { Operator } from "../../signer-agent/src/operator";
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from "../helpers/gateway";
import { CHROMIUM, ENABLE_BROWSER as ENABLE, launchBrowser, requireBrowserOrSkip } from "../helpers/browser";
import { money, when } from "../../gateway/src/console/figures";
import { textArtefacts } from "../helpers/figures";
import { authed, registerTreasury } from "../helpers/treasury";

requireBrowserOrSkip("console.test");

const SHOTS = path.resolve("test-results", "console", process.env.TEST_STORE ?? "sqlite");

let fork: BaseForkNode;
let gw: TestGateway;
let browser: Browser;
let engine: ProtectionEngine;
let executor: SafeExecutor;
const automationKey = generatePrivateKey();
const automation = privateKeyToAccount(automationKey);

beforeAll(async () => {
  if (!CHROMIUM) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  fork = await startBaseFork();
  await fork.fund(automation.address);
  gw = await startTestGateway({ BASE_RPC_URL: fork.rpcUrl, AUTOMATION_ADDRESS: automation.address });
  engine = new ProtectionEngine(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
  executor = new SafeExecutor(gw.ctx, { rpcUrls: { base: fork.rpcUrl }, automationKey });
  browser = await launchBrowser();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await fork?.stop();
});

/** a page that records every request leaving the gateway's host and every script error */
async function openPage(width = 1200): Promise<{ page: Page; foreign: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const foreign: string[] = [];
  const errors: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(gw.url)) foreign.push(r.url());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return { page, foreign, errors };
}

/** an EIP-1193 provider in the page, backed by `key` on the fork (the operator's wallet) */
async function injectWallet(page: Page, key: Hex): Promise<void> {
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ account, chain: base, transport: http(fork.rpcUrl) }).extend(publicActions);
  await page.exposeFunction("__wallet", async (method: string, params: unknown[]) => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [account.address];
      case "personal_sign":
        return account.signMessage({ message: { raw: params[0] as Hex } });
      case "eth_signTypedData_v4":
        return account.signTypedData(JSON.parse(params[1] as string));
      case "eth_sendTransaction": {
        const tx = params[0] as { to: Hex; data: Hex };
        return wallet.sendTransaction({ to: tx.to, data: tx.data, gas: 3_000_000n, chain: base });
      }
      default:
        return wallet.request({ method: method as never, params: params as never });
    }
  });
  await page.addInitScript(() => {
    const page = globalThis as any; // the page's window
    page.ethereum = { request: ({ method, params }: { method: string; params?: unknown[] }) => page.__wallet(method, params ?? []) };
  });
}

describe.skipIf(!CHROMIUM)(`/console${CHROMIUM ? "" : ` (skipped: no Chromium; enable with: ${ENABLE})`}`, () => {
  it("reviewer: takes a request into review and closes it approved; the operator's outbox receives the live key", async () => {
    const applied = await call(gw.url, "POST", "/api/v1/agents/apply", {
      body: {
        operator_name: "Ada Operator",
        operator_email: "ada@example.com",
        use_case: "Weekly BTC accumulation with a small USDC credit line, human approval for borrows.",
        agent_name: "treasurer-1",
      },
    });
    const id = applied.body.id as string;
    const { page, foreign, errors } = await openPage();
    await page.goto(`${gw.url}/console#reviewer`);
    await page.fill("#admin-token", ADMIN_TOKEN);
    await page.fill("#reviewer-name", "Rita Reviewer");
    await page.click("#admin-form button[type=submit]");
    const card = page.locator(`[data-testid=request][data-id="${id}"]`);
    await expect.poll(() => card.getAttribute("data-status")).toBe("received");
    await page.screenshot({ path: path.join(SHOTS, "reviewer-queue.png"), fullPage: true });
    await card.locator("button[data-review]").click();
    await expect.poll(() => page.locator(`[data-testid=request][data-id="${id}"]`).getAttribute("data-status")).toBe("in_review");
    const reviewing = page.locator(`[data-testid=request][data-id="${id}"]`);
    await reviewing.locator("select[name=outcome]").selectOption("approved");
    await reviewing.locator("input[name=note]").fill("called the operator; strategy understood");
    await reviewing.locator("button[type=submit]").click();
    await expect.poll(() => page.locator("[data-testid=close-result]").textContent()).toContain("approved");
    const closed = page.locator(`[data-testid=request][data-id="${id}"]`);
    expect(await closed.getAttribute("data-status")).toBe("closed");
    await closed.locator("details summary").click();
    expect(await closed.locator("details li").count()).toBe(3); // received, in_review, closed
    await page.screenshot({ path: path.join(SHOTS, "reviewer-closed.png"), fullPage: true });
    // the key is never on the page; it waits in the operator's outbox
    expect(await page.content()).not.toMatch(/sk_live_/);
    const outbox = await call(gw.url, "GET", "/admin/outbox", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const message = outbox.body.data.find((m: any) => m.relatedId === id);
    expect(message).toMatchObject({ kind: "access_approved", recipient: "ada@example.com" });
    expect(JSON.parse(message.body).api_key).toMatch(/^sk_live_/);
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("operator: signs in, approves delegation, signs a deposit that executes, sees protection act at the park line, revokes", async () => {
    const ownerKey = generatePrivateKey();
    const operator = new Operator({ privateKey: ownerKey, rpcUrl: fork.rpcUrl });
    await fork.fund(operator.account.address);
    const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    const tenant = await registerTreasury(gw.url, {
      wallet_address: safe,
      execution_mode: "managed",
      ownership_proof: await operator.ownershipProof(gw.url, "managed"),
    });
    const api = authed(gw.url, tenant.key);
    await operator.fundWeth(10n * 10n ** 18n);
    await operator.supplyAndBorrow(10n * 10n ** 18n, 15_000n * 10n ** 6n);
    await fork.fund(safe, 1_000_000_000n);
    // the module deployed and attached with the Safe's proof (signer-agent operator approve does this); approval is the console's
    const module = await operator.deployModule(automation.address, 2500);
    const safe_proof = await operator.delegationProof({ service: gw.url, treasuryId: tenant.treasuryId, module, protectBelowHealth: 1.3, parkTargetBps: 2500 });
    expect((await api.post("/api/v1/delegation", { module, safe_proof }, null)).status).toBe(200);

    const { page, foreign, errors } = await openPage();
    await injectWallet(page, ownerKey);
    await page.goto(`${gw.url}/console?refresh_ms=500#operator`);
    await page.fill("#safe", safe);
    await page.click("#signin button[type=submit]");
    await page.waitForSelector("[data-testid=ltv]");
    // every figure is the API's
    const state = (await api.get("/api/v1/treasury")).body;
    expect(await page.textContent("[data-testid=ltv]")).toBe(`${state.ltv} %`);
    expect(await page.textContent("[data-testid=health]")).toBe(String(state.health_score));
    expect(await page.textContent("[data-testid=debt]")).toBe(`${money(state.borrowed_usd)} USDC`);
    expect(await page.textContent("[data-testid=collateral]")).toBe(`${money(state.collateral_value_usd)} USD`);
    expect(await page.textContent("[data-testid=total-value]")).toBe(`${money(state.total_value_usd)} USD`);
    expect(await page.textContent("[data-testid=delegation-state]")).toBe("not_granted");
    await page.screenshot({ path: path.join(SHOTS, "operator-signed-in.png"), fullPage: true });

    // approve: enableModule as a Safe transaction the wallet signs and sends
    await page.click("#approve");
    await expect.poll(() => page.textContent("[data-testid=delegation-state]"), { timeout: 20_000 }).toBe("active");
    expect(await operator.moduleEnabled(module)).toBe(true);

    // a deposit waits for the owner's signature in the console, then executes on the fork
    const deposit = await api.post("/api/v1/deposits", { amount_usdc: 500 });
    expect(deposit.body).toMatchObject({ status: "processing" });
    const pending = page.locator(`[data-testid=safe-tx][data-id="${deposit.body.safe_transaction.id}"]`);
    await pending.locator("button[data-sign]").click({ timeout: 10_000 });
    await expect.poll(async () => (await api.get(`/api/v1/safe-transactions/${deposit.body.safe_transaction.id}`)).body.signatures.length).toBe(1);
    await page.screenshot({ path: path.join(SHOTS, "operator-signed-deposit.png"), fullPage: true });
    const ran = (await executor.tick()).find((r) => r.id === deposit.body.safe_transaction.id)!;
    expect(ran.outcome, ran.detail).toBe("executed");
    expect((await api.get(`/api/v1/receipts/${deposit.body.deposit_id}`)).body).toMatchObject({ status: "completed", tx_hash: ran.txHash });
    await expect.poll(() => page.locator(`[data-testid=safe-tx][data-id="${deposit.body.safe_transaction.id}"]`).getAttribute("data-status")).toBe("executed");
    await expect.poll(() => page.locator("[data-testid=audit] tr").count()).toBe(2); // header + the deposit's fee

    // the price falls under the protect line; the engine repays to the park target
    await engine.tick(); // a sample before the fall
    await fork.setPrice("WETH", 2_300);
    await engine.tick(); // samples the fall and acts
    const after = (await api.get("/api/v1/treasury")).body;
    expect(after.ltv).toBeGreaterThanOrEqual(25);
    expect(after.ltv).toBeLessThan(25.5);
    await engine.tick(); // samples the recovered position
    await expect.poll(() => page.locator("[data-testid=protection-actions] tr").count(), { timeout: 10_000 }).toBe(2);
    // the event log, live on the page (the gateway's event stream): the engine's action as it happened
    await expect.poll(() => page.locator('[data-testid=event-log] tr[data-type="protection.acted"]').count(), { timeout: 10_000 }).toBe(1);
    const acted = (await page.textContent('[data-testid=event-log] tr[data-type="protection.acted"]')) ?? "";
    expect(acted).toMatch(/repaid [\d,.]+ USDC \(health 1\.\d+ before\), LTV 2\d(\.\d+)? % after/);
    for (const type of ["delegation.changed", "safe_transaction.awaiting_signatures", "safe_transaction.executed"])
      expect(await page.locator(`[data-testid=event-log] tr[data-type="${type}"]`).count(), type).toBeGreaterThan(0);
    await expect.poll(() => page.textContent("[data-testid=ltv]"), { timeout: 10_000 }).toBe(`${after.ltv} %`);
    const history = (await api.get("/api/v1/health/history")).body.points as { ltv: number; health_score: number }[];
    expect(history.some((p) => p.health_score < 1.3)).toBe(true); // the fall, below the protect line
    expect(history.at(-1)!.ltv).toBe(after.ltv); // back at the park line
    const label = await page.getAttribute("[data-testid=chart]", "aria-label");
    expect(label).toContain(`latest LTV ${after.ltv}`);
    expect(Number(await page.getAttribute("[data-testid=chart]", "data-points"))).toBeGreaterThanOrEqual(history.length);
    const gas = (await api.get("/api/v1/delegation")).body.gas;
    expect(gas.spent_this_month_usd).toBeGreaterThan(0);
    await expect
      .poll(() => page.textContent("[data-testid=gas-month]"))
      .toBe(`${money(gas.spent_this_month_usd)} USD of ${money(gas.per_month_usd)} USD this month; at most ${money(gas.per_action_usd)} USD an action.`);
    // what a person reads: no float noise anywhere on the page, times in the reader's zone (the ISO time on hover)
    const text = (await page.textContent("body")) ?? "";
    expect(textArtefacts(text)).toEqual([]);
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    const action = (await api.get("/api/v1/delegation")).body.protection_actions.at(-1);
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(text).toContain(when(action.created_at, zone));
    await page.screenshot({ path: path.join(SHOTS, "operator-protected.png"), fullPage: true });

    // phone width: the same page, one column, nothing wider than the screen
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: path.join(SHOTS, "operator-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1200, height: 900 });

    // an upgrade: a newer module attached with the Safe's proof waits while the one in force protects; the console
    // offers it, and the wallet signs and sends the one Safe transaction that enables it and disables the old one
    const next = await operator.deployModule(automation.address, 2500);
    const nextProof = await operator.delegationProof({
      service: gw.url,
      treasuryId: tenant.treasuryId,
      module: next,
      protectBelowHealth: 1.3,
      parkTargetBps: 2500,
    });
    const staged = await api.post("/api/v1/delegation", { module: next, safe_proof: nextProof }, null);
    expect(staged.body.pending_upgrade.module.toLowerCase()).toBe(next.toLowerCase());
    await page.waitForSelector("[data-testid=pending-upgrade]", { timeout: 10_000 });
    await page.screenshot({ path: path.join(SHOTS, "operator-upgrade.png"), fullPage: true });
    await page.click("#upgrade");
    await expect.poll(async () => ((await api.get("/api/v1/delegation")).body.module as string).toLowerCase(), { timeout: 20_000 }).toBe(next.toLowerCase());
    expect(await operator.moduleEnabled(next)).toBe(true);
    expect(await operator.moduleEnabled(module)).toBe(false);
    await expect.poll(() => page.locator("[data-testid=pending-upgrade]").count(), { timeout: 10_000 }).toBe(0);

    // revoke: disableModule, signed and sent by the wallet
    await page.click("#revoke");
    await expect.poll(() => page.textContent("[data-testid=delegation-state]"), { timeout: 20_000 }).toBe("revoked");
    expect(await operator.moduleEnabled(next)).toBe(false);
    await page.screenshot({ path: path.join(SHOTS, "operator-revoked.png"), fullPage: true });
    await fork.setPrice("WETH", 3_000);

    // a downward leg among the actions the owner signs: a withdrawal, shown for what it is, free, signed in the console
    const w = await api.post("/api/v1/withdraw", { asset: "USDC", amount_usdc: 50 });
    expect([w.status, w.body.fee_usdc], w.text).toEqual([200, 0]);
    const card = page.locator(`[data-testid=safe-tx][data-id="${w.body.safe_transaction.id}"]`);
    await expect.poll(() => card.locator("[data-testid=safe-tx-title]").textContent(), { timeout: 10_000 }).toBe("withdraw 50 USDC from Aave");
    await card.locator("button[data-sign]").click({ timeout: 10_000 });
    await expect.poll(async () => (await api.get(`/api/v1/safe-transactions/${w.body.safe_transaction.id}`)).body.signatures.length).toBe(1);
    const withdrawn = (await executor.tick()).find((r) => r.id === w.body.safe_transaction.id)!;
    expect(withdrawn.outcome, withdrawn.detail).toBe("executed");
    await expect.poll(() => card.getAttribute("data-status")).toBe("executed");
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 180_000);

  it("operator sign-in is refused for a wallet that is not an owner of the Safe, and for a Safe registered without its proof", async () => {
    const operator = new Operator({ privateKey: generatePrivateKey(), rpcUrl: fork.rpcUrl });
    await fork.fund(operator.account.address);
    const safe = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    await registerTreasury(gw.url, { wallet_address: safe, execution_mode: "managed", ownership_proof: await operator.ownershipProof(gw.url, "managed") });
    const { page } = await openPage(390);
    await injectWallet(page, generatePrivateKey()); // a stranger's wallet
    await page.goto(`${gw.url}/console#operator`);
    await page.fill("#safe", safe);
    await page.click("#signin button[type=submit]");
    await expect.poll(() => page.textContent("[data-testid=error]")).toContain("not_an_owner");
    expect(await page.locator("[data-testid=ltv]").count()).toBe(0);
    await page.close();
    // a Safe registered by someone without the Safe's proof is never opened in the console, even to its owner
    const other = await operator.createSafe(String(Math.floor(Math.random() * 1e9)));
    await registerTreasury(gw.url, { wallet_address: other, execution_mode: "managed" });
    const statement = await call(gw.url, "GET", `/api/v1/console/sign-in?owner=${operator.account.address}&safe=${other}`);
    expect(statement.status).toBe(404);
    expect(statement.body.error).toBe("treasury_not_found");
  }, 60_000);
});
