/** What every service and route gets: configuration, stores, clock, links. */
import type { Config } from "../config";
import type { Clock } from "../lib/clock";
import type { Db } from "../store/db";
import type { SecretBox } from "../lib/secrets";
import { AccessRequestStore } from "../store/access-request-store";
import { ApiKeyStore } from "../store/api-key-store";
import { DelegationStore } from "../store/delegation-store";
import { EnvelopeStore } from "../store/envelope-store";
import { ExecutionStore } from "../store/execution-store";
import { FeeStore } from "../store/fee-store";
import { IdempotencyStore } from "../store/idempotency-store";
import { OutboxStore } from "../store/outbox-store";
import { PaymentStore } from "../store/payment-store";
import { SlotStore } from "../store/slot-store";
import { TreasuryStore } from "../store/treasury-store";

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
  delegations: DelegationStore;
  slots: SlotStore;
}

export function createStores(db: Db, box: SecretBox): Stores {
  return {
    treasuries: new TreasuryStore(db),
    apiKeys: new ApiKeyStore(db),
    accessRequests: new AccessRequestStore(db),
    outbox: new OutboxStore(db, box),
    fees: new FeeStore(db),
    idempotency: new IdempotencyStore(db),
    envelopes: new EnvelopeStore(db),
    executions: new ExecutionStore(db),
    payments: new PaymentStore(db),
    delegations: new DelegationStore(db),
    slots: new SlotStore(db),
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

export interface AppContext {
  config: Config;
  db: Db;
  stores: Stores;
  clock: Clock;
  links: Links;
}
