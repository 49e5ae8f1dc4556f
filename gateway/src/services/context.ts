/**
 * What services are given. The runtime (configuration, clock, links, the
 * transaction boundary) is shared; stores are handed out by name, so each
 * service receives only the stores it uses (`ServiceContext<"fees">` cannot
 * reach the envelopes) and the type checker holds it to that.
 */
import { InstanceStore } from "../store/instance-store";
import type { Config } from "../config";
import type { Clock } from "../lib/clock";
import type { Db } from "../store/db";
import type { SecretBox } from "../lib/secrets";
import { AccessRequestStore } from "../store/access-request-store";
import { ApiKeyStore } from "../store/api-key-store";
import { AutomationNonceStore } from "../store/automation-nonce-store";
import { ChannelStore } from "../store/channel-store";
import { DelegationStore } from "../store/delegation-store";
import { EngineShardStore } from "../store/engine-shard-store";
import { EnvelopeStore } from "../store/envelope-store";
import { EventStore } from "../store/event-store";
import { ExecutionStore } from "../store/execution-store";
import { FeeStore } from "../store/fee-store";
import { IdempotencyStore } from "../store/idempotency-store";
import { OutboxStore } from "../store/outbox-store";
import { PaymentStore } from "../store/payment-store";
import { PositionSampleStore } from "../store/position-sample-store";
import { ProtectionClaimStore } from "../store/protection-claim-store";
import { RateLimitStore } from "../store/rate-limit-store";
import { SafeTransactionStore } from "../store/safe-transaction-store";
import { SignedNonceStore } from "../store/signed-nonce-store";
import { SlotStore } from "../store/slot-store";
import { TreasuryStore } from "../store/treasury-store";
import { WebhookStore } from "../store/webhook-store";

export interface Stores {
  treasuries: TreasuryStore;
  apiKeys: ApiKeyStore;
  accessRequests: AccessRequestStore;
  outbox: OutboxStore;
  fees: FeeStore;
  idempotency: IdempotencyStore;
  envelopes: EnvelopeStore;
  executions: ExecutionStore;
  payments: PaymentStore;
  channels: ChannelStore;
  delegations: DelegationStore;
  slots: SlotStore;
  signedNonces: SignedNonceStore;
  rateLimits: RateLimitStore;
  protectionClaims: ProtectionClaimStore;
  safeTransactions: SafeTransactionStore;
  positionSamples: PositionSampleStore;
  instances: InstanceStore;
  engineShards: EngineShardStore;
  automationNonces: AutomationNonceStore;
  events: EventStore;
  webhooks: WebhookStore;
}

export type StoreName = keyof Stores;

/** `opts.eventLog` false: no event is written (EVENT_LOG=off: the bench's baseline of the event path) */
export function createStores(db: Db, box: SecretBox, opts: { eventLog?: boolean } = {}): Stores {
  const events = new EventStore(db, opts.eventLog ?? true);
  return {
    treasuries: new TreasuryStore(db),
    apiKeys: new ApiKeyStore(db),
    accessRequests: new AccessRequestStore(db),
    outbox: new OutboxStore(db, box),
    fees: new FeeStore(db),
    idempotency: new IdempotencyStore(db),
    envelopes: new EnvelopeStore(db),
    executions: new ExecutionStore(db),
    payments: new PaymentStore(db, events),
    channels: new ChannelStore(db, events),
    delegations: new DelegationStore(db),
    slots: new SlotStore(db),
    signedNonces: new SignedNonceStore(db),
    rateLimits: new RateLimitStore(db),
    protectionClaims: new ProtectionClaimStore(db),
    safeTransactions: new SafeTransactionStore(db),
    positionSamples: new PositionSampleStore(db),
    instances: new InstanceStore(db),
    engineShards: new EngineShardStore(db),
    automationNonces: new AutomationNonceStore(db),
    events,
    webhooks: new WebhookStore(db, box),
  };
}

export interface Links {
  base: string;
  url(path: string): string;
}

export function linksFor(baseUrl: string): Links {
  const base = baseUrl.replace(/\/+$/, "");
  return { base, url: (path: string) => `${base}${path.startsWith("/") ? path : `/${path}`}` };
}

/** the transaction boundary: what a service may do with the database itself (its queries go through stores) */
export interface Transactor {
  transaction<T>(fn: () => Promise<T>): Promise<T>;
}

export interface Runtime {
  config: Config;
  clock: Clock;
  links: Links;
  tx: Transactor;
}

/** a service's view: the runtime and the named stores, nothing else */
export interface ServiceContext<K extends StoreName = never> extends Runtime {
  stores: Pick<Stores, K>;
}

/** The process's composition root (server.ts builds it); services get `scope(...)` of it. */
export interface AppContext extends Runtime {
  db: Db;
  stores: Stores;
}

export function scope<K extends StoreName = never>(ctx: AppContext, ...names: K[]): ServiceContext<NoInfer<K>> {
  const stores = {} as Pick<Stores, K>;
  for (const n of names) stores[n] = ctx.stores[n];
  // links are filled in once the server listens: read them through the root
  return {
    config: ctx.config,
    clock: ctx.clock,
    tx: ctx.tx,
    stores,
    get links() {
      return ctx.links;
    },
  };
}
