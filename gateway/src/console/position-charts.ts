/**
 * The pictures of the operator's position: the LTV zones as a bar with the LTV marked, and the health score and
 * LTV over time as an SVG chart with the protect and park lines.
 */
import { figure as num } from "./figures";
import { esc } from "./page";

export function zoneBar(zones: any, ltv: number): string {
  if (!zones) return "";
  const max = Math.max(100, Number(zones.hard_ceiling) + 20);
  const part = (name: string, z: { min: number; max: number }) =>
    `<div style="width:${((z.max - z.min) / max) * 100}%" title="${esc(name)} ${z.min}-${z.max}%">${esc(name)}</div>`;
  return `<div class="zones" aria-hidden="true">${part("safe", zones.safe)}${part("active", zones.active)}${part("ceiling", zones.ceiling)}<div style="flex:1">refused</div>
    <div class="marker" style="left:${(Math.min(ltv, max) / max) * 100}%"><span>LTV ${num(ltv)}</span></div></div>
    <p class="muted" data-testid="zones">LTV zones: safe ${num(zones.safe.min)}-${num(zones.safe.max)} %, active ${num(zones.active.min)}-${num(zones.active.max)} %, ceiling ${num(zones.ceiling.min)}-${num(zones.ceiling.max)} %; a borrow above ${num(zones.hard_ceiling)} % is refused.</p>`;
}

/** LTV (solid, left axis %) and health score (dashed, right axis) over time, the park line (LTV) and the protect line (health) */
export function chart(points: { at: string; ltv: number; health_score: number }[], protectAt: number, parkAt: number): string {
  const W = 600,
    H = 240,
    L = 36,
    R = 36,
    T = 12,
    B = 26;
  const pts = points.filter((p) => Number.isFinite(Date.parse(p.at))).sort((a, b) => a.at.localeCompare(b.at));
  if (pts.length === 0) return `<p>No samples yet.</p>`;
  const t0 = Date.parse(pts[0]!.at),
    t1 = Math.max(Date.parse(pts.at(-1)!.at), t0 + 1000);
  const HMAX = 4;
  const x = (at: string) => L + ((Date.parse(at) - t0) / (t1 - t0)) * (W - L - R);
  const yL = (ltv: number) => T + (1 - Math.min(ltv, 100) / 100) * (H - T - B);
  const yH = (h: number) => T + (1 - Math.min(h, HMAX) / HMAX) * (H - T - B);
  const line = (f: (p: (typeof pts)[number]) => number) => pts.map((p, i) => `${i ? "L" : "M"}${x(p.at).toFixed(1)},${f(p).toFixed(1)}`).join(" ");
  const last = pts.at(-1)!;
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" data-testid="chart" data-points="${pts.length}" aria-label="LTV and health score over time: latest LTV ${last.ltv}, health ${last.health_score}">
    <rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#bbb"/>
    ${[0, 25, 50, 75, 100].map((v) => `<text x="2" y="${yL(v) + 3}">${v}%</text>`).join("")}
    ${[0, 1, 2, 3, 4].map((v) => `<text x="${W - R + 4}" y="${yH(v) + 3}">${v}</text>`).join("")}
    <line x1="${L}" x2="${W - R}" y1="${yL(parkAt)}" y2="${yL(parkAt)}" stroke="#111" stroke-dasharray="2 4"/><text x="${L + 4}" y="${yL(parkAt) - 3}">park ${parkAt}% LTV</text>
    <line x1="${L}" x2="${W - R}" y1="${yH(protectAt)}" y2="${yH(protectAt)}" stroke="#111" stroke-dasharray="8 3 2 3"/><text x="${W - R - 110}" y="${yH(protectAt) - 3}">protect below ${protectAt}</text>
    <path d="${line((p) => yL(p.ltv))}" fill="none" stroke="#111" stroke-width="2" data-series="ltv"/>
    <path d="${line((p) => yH(p.health_score))}" fill="none" stroke="#555" stroke-width="2" stroke-dasharray="6 3" data-series="health"/>
    <text x="${L}" y="${H - 8}">${esc(pts[0]!.at.slice(11, 19))} UTC</text><text x="${W - R - 60}" y="${H - 8}">${esc(last.at.slice(11, 19))} UTC</text>
    <text x="${L + 150}" y="${H - 8}">solid: LTV % (left) - dashed: health score (right)</text></svg>`;
}
