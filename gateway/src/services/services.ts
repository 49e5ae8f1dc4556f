/**
 * The service graph: every service the routes and the MCP tools call, built
 * once per process from the context (stores, config, clock). Kept apart from
 * app.ts (the HTTP assembly) so that the MCP tools and the routes depend on
 * the services, never on the app.
 */
import { onTreasuryChains } from "@treasury/core/contracts/chains";
import { ChainGateway } from "../chain/chain-gateway";
import { WalletSignatureAuth } from "./wallet-signature";
import { NonceHints } from "../chain/nonce-hints";
import { SandboxChain } from "../chain/sandbox-chain";
import { X402_ASSET } from "../x402/asset";
import { BazaarCatalog } from "../x402/bazaar";
import { facilitatorConfig } from "../x402/facilitator-client";
import { createPaymentGate, type PaymentGate } from "../x402/payment-gate";
import type { AnyScheme } from "../x402/schemes/scheme";
import { PriceList } from "../x402/prices";
import { AccessRequestService } from "./access-request-service";
import { ActionService } from "./action-service";
import { bearerAuthenticator, type Authenticator } from "./authenticator";
import { scope, type AppContext } from "./context";
import { DelegationService } from "./delegation-service";
import { EventService } from "./event-service";
import { MarketRatesService } from "./market-rates";
import { PolicyService } from "./policy-service";
import { PreviewService } from "./preview-service";
import { RelayService } from "./relay-service";
import { ConsoleOwnership } from "./console-ownership";
import { ConsoleSessionService } from "./console-sessions";
import { SafeTransactionService } from "./safe-transaction-service";
import { StatementVerifier } from "./statement-verifier";
import { TreasuryService } from "./treasury-service";

export interface Services {
  treasuries: TreasuryService;
  access: AccessRequestService;
  preview: PreviewService;
  policy: PolicyService;
  marketRates: MarketRatesService;
  actions: ActionService;
  relay: RelayService;
  delegation: DelegationService;
  safeTransactions: SafeTransactionService;
  /** the treasury's event log as its clients read it, and its webhooks */
  events: EventService;
  consoleSessions: ConsoleSessionService;
  /** the wallet's own signature (x402 sign-in-with-x) on the downward legs */
  walletSignature: WalletSignatureAuth;
  authenticate: Authenticator;
  prices: PriceList;
  /** x402 bazaar metadata of the priced routes, filled as they are registered */
  catalog: BazaarCatalog;
  payments: PaymentGate;
}

/** `opts.schemes`: the x402 schemes the payment gate takes (its registry unless given) */
export function createServices(ctx: AppContext, opts: { schemes?: readonly AnyScheme[] } = {}): Services {
  const marketRates = new MarketRatesService(ctx.config.rpcUrls, {
    ttlSeconds: ctx.config.marketRatesTtlSeconds,
    timeoutMs: ctx.config.rpcTimeoutMs,
    clock: ctx.clock,
  });
  const prices = new PriceList();
  const catalog = new BazaarCatalog();
  const chainRpcs = onTreasuryChains(ctx.config.rpcUrls);
  const chain = new ChainGateway(chainRpcs, ctx.config.rpcTimeoutMs);
  const statements = new StatementVerifier(scope(ctx, "signedNonces"), chain);
  const delegation = new DelegationService(scope(ctx, "delegations", "events", "instances", "treasuries"), chain, statements);
  const actions = new ActionService(
    scope(ctx, "apiKeys", "envelopes", "events", "executions", "fees", "safeTransactions", "slots", "treasuries"),
    new NonceHints(chainRpcs, ctx.config.rpcTimeoutMs),
    chain,
    new SandboxChain(chain, ctx.config.sandboxChainTools, ctx.config.liveChains),
  );
  const safeTransactions = new SafeTransactionService(scope(ctx, "safeTransactions", "treasuries"), chain);
  const { backing } = actions;
  const relay = new RelayService(scope(ctx, "envelopes"), { backing, envelopes: actions.envelopes, sandboxSteps: actions.sandboxSteps, chain });
  return {
    treasuries: new TreasuryService(
      scope(ctx, "apiKeys", "envelopes", "executions", "fees", "positionSamples", "treasuries"),
      {
        position: (t) => backing.chainPosition(t),
        backed: (t) => backing.chainBacked(t),
        protection: (t) => delegation.protection(t),
        reconcile: (id) => relay.reconcileTreasury(id),
      },
      statements,
    ),
    access: new AccessRequestService(scope(ctx, "accessRequests", "apiKeys", "events", "outbox", "treasuries")),
    preview: new PreviewService(scope(ctx, "fees"), (chain) => marketRates.freshApy(chain), {
      treasury: (id) => backing.treasury(id),
      position: (t) => backing.chainPosition(t),
    }),
    policy: new PolicyService(scope(ctx, "fees"), { protection: (t) => delegation.protection(t), backed: (t) => backing.chainBacked(t) }),
    marketRates,
    actions,
    relay,
    delegation,
    safeTransactions,
    events: new EventService(scope(ctx, "events", "webhooks")),
    consoleSessions: new ConsoleSessionService(scope(ctx, "apiKeys", "signedNonces", "treasuries"), safeTransactions),
    walletSignature: new WalletSignatureAuth(scope(ctx, "signedNonces", "treasuries"), chain),
    authenticate: bearerAuthenticator(scope(ctx, "apiKeys"), new ConsoleOwnership(scope(ctx, "apiKeys", "treasuries"), chain)),
    prices,
    catalog,
    payments: createPaymentGate(
      scope(ctx, "payments", "treasuries", "channels"),
      {
        prices,
        catalog,
        asset: { address: X402_ASSET.address, name: X402_ASSET.name, version: X402_ASSET.version },
        facilitator: facilitatorConfig(
          ctx.config.x402.facilitator,
          ctx.config.x402.facilitatorUrl,
          { keyId: ctx.config.x402.cdpKeyId, keySecret: ctx.config.x402.cdpKeySecret },
          ctx.config.x402.facilitatorApiKey,
        ),
      },
      opts.schemes,
    ),
  };
}
