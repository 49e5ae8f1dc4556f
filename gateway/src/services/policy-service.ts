/** Policy state (spec 2.12) of the demo or of a treasury. */
import { policyStateDocument, type DelegationState } from "../domain/policy";
import { PRESETS } from "../domain/presets";
import type { TreasuryRecord } from "../store/treasury-store";
import type { ServiceContext } from "./context";
import type { Subject } from "./subject";

export class PolicyService {
  /** the public demo's clock starts when the service starts (the demo is reset at every start) */
  private readonly demoActivityAt: Date;

  constructor(
    private readonly ctx: ServiceContext<"fees">,
    /** a treasury's delegation state, derived from its chain (not_granted without a delegation) */
    private readonly delegationOf: (t: TreasuryRecord) => Promise<DelegationState> = async () => "not_granted",
  ) {
    this.demoActivityAt = ctx.clock.now();
  }

  forTreasury(t: TreasuryRecord) {
    return this.forSubject({ environment: "sandbox_simulation", address: t.walletAddress, holdings: t.holdings, preset: PRESETS[t.preset], treasury: t });
  }

  async forSubject(subject: Subject) {
    const t = subject.treasury;
    const lastFeeBearing = t ? await this.ctx.stores.fees.lastFeeBearingAt(t.id) ?? t.createdAt : this.demoActivityAt.toISOString();
    const delegationState: DelegationState = t ? await this.delegationOf(t) : "active";
    return policyStateDocument({
      environment: subject.environment,
      address: subject.address,
      preset: subject.preset,
      protectionStatus: delegationState === "active" ? "active" : "inactive",
      delegationState,
      lastFeeBearingActivityAt: new Date(lastFeeBearing),
      feeScheduleUrl: this.ctx.links.url("/fees.json"),
      docsUrl: this.ctx.links.url("/docs"),
      executionMode: t ? t.executionMode : "demo",
    });
  }
}
