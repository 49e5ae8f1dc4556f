/**
 * What the payment gate is given: x402's configuration, the clock, the public links, the transaction
 * boundary and its two stores (services/context.ts's `ServiceContext<"payments" | "treasuries">` is one),
 * and its options: the price list, the bazaar catalogue, the asset and the facilitator.
 */
import type { ChannelStore } from "../store/channel-store";
import type { FacilitatorConfig } from "x402/types";
import type { Config } from "../config";
import type { Clock } from "../lib/clock";
import type { PaymentStore } from "../store/payment-store";
import type { TreasuryStore } from "../store/treasury-store";
import type { BazaarCatalog } from "./bazaar";
import type { PriceList } from "./prices";

export interface PaymentGateContext {
  config: Pick<Config, "x402">;
  clock: Clock;
  links: { url(path: string): string };
  tx: { transaction<T>(fn: () => Promise<T>): Promise<T> };
  stores: { payments: PaymentStore; treasuries: TreasuryStore; channels: ChannelStore };
}

export interface PaymentGateOptions {
  prices: PriceList;
  catalog?: BazaarCatalog;
  asset: { address: `0x${string}`; name: string; version: string };
  facilitator: FacilitatorConfig;
}
