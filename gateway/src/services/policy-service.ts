/** Policy state (spec 2.12) of the demo or of a treasury. */
import { policyStateDocument, type DelegationState } from "@treasury/core/domain/policy";
import { PRESETS } from "@treasury/core/domain/presets";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import type { Subject } from "./subject";

export class PolicyService {
  /** the public demo's clock starts when the service starts (the demo is reset at every start) */
  private readonly demoActivityAt: Date;

  constructor(
    private readonly ctx: ServiceContext<"fees">,
    private readonly treasurySide: {
      /** a treasury's delegation state, derived from its chain (not_granted without a delegation), and whether an engine acts on it */
      protection(t: TreasuryRecord): Promise<{ state: DelegationState; active: boolean }>;
      /** is the treasury's figures' source its chain */
      backed(t: TreasuryRecord): boolean;
    } = { protection: async () => ({ state: "not_granted", active: false }), backed: () => false },
  ) {
    this.demoActivityAt = ctx.clock.now();
  }

  forTreasury(t: TreasuryRecord) {
    return this.forSubject({
      environment: this.treasurySide.backed(t) ? "chain" : "sandbox_simulation",
      address: t.walletAddress,
      holdings: t.holdings,
      preset: PRESETS[t.preset],
      treasury: t,
    });
  }

  async forSubject(subject: Subject) {
    const t = subject.treasury;
    const lastFeeBearing = t ? ((await this.ctx.stores.fees.lastFeeBearingAt(t.id)) ?? t.createdAt) : this.demoActivityAt.toISOString();
    // the public demo shows protection as its policy runs it
    const protection = t ? await this.treasurySide.protection(t) : { state: "active" as const, active: true };
    return policyStateDocument({
      environment: subject.environment,
      address: subject.address,
      preset: subject.preset,
      protectionStatus: protection.active ? "active" : "inactive",
      delegationState: protection.state,
      lastFeeBearingActivityAt: new Date(lastFeeBearing),
      feeScheduleUrl: this.ctx.links.url("/fees.json"),
      docsUrl: this.ctx.links.url("/docs"),
      executionMode: t ? t.executionMode : "demo",
    });
  }
}
