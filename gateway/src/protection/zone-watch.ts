/**
 * `health.zone_changed`: the zone of each position the engine read this pass (its preset's LTV bands: safe,
 * active, ceiling, and past the ceiling `hard_ceiling`), compared with the last zone its treasury's log
 * recorded; a change is an event. The last zone is kept in memory once read from the log, so a pass costs
 * no read per Safe; an engine that takes over a shard reads it from the log again.
 */
import { zoneOf } from "@treasury/core/domain/position";
import { PRESETS } from "@treasury/core/domain/presets";
import type { HealthZone } from "@treasury/core/schemas/events";
import type { EngineContext } from "./trigger-run";

export interface ZoneSample {
  treasuryId: string;
  ltv: number;
  healthScore: number;
}

export class ZoneWatch {
  private readonly last = new Map<string, HealthZone | null>();
  private readonly presets = new Map<string, keyof typeof PRESETS>();

  constructor(private readonly ctx: EngineContext) {}

  async observe(samples: readonly ZoneSample[]): Promise<void> {
    for (const s of samples) {
      let preset = this.presets.get(s.treasuryId);
      if (!preset) {
        const t = await this.ctx.stores.treasuries.get(s.treasuryId);
        if (!t) continue;
        this.presets.set(s.treasuryId, (preset = t.preset));
      }
      const z = zoneOf(s.ltv, PRESETS[preset]);
      const zone: HealthZone = z === "over_ceiling" ? "hard_ceiling" : z;
      if (!this.last.has(s.treasuryId)) {
        const recorded = await this.ctx.stores.events.lastOfType(s.treasuryId, "health.zone_changed");
        this.last.set(s.treasuryId, (recorded?.data.zone as HealthZone | undefined) ?? null);
      }
      const previous = this.last.get(s.treasuryId)!;
      if (previous === zone) continue;
      await this.ctx.stores.events.append(
        s.treasuryId,
        "health.zone_changed",
        { zone, previous_zone: previous, health_factor: Number.isFinite(s.healthScore) ? s.healthScore : null, ltv: s.ltv },
        { now: this.ctx.clock.now() },
      );
      this.last.set(s.treasuryId, zone);
    }
  }
}
