/**
 * The picture of a scenario: the health factor over time with and without
 * protection, from a real run's series, as an SVG (text, so it lives in git
 * and renders where Markdown does).
 */
import type { ScenarioResult } from "./scenario";
import { BLOCK_SECONDS } from "./paths";

export function healthPicture(r: ScenarioResult, opts: { width?: number; height?: number; maxHealth?: number } = {}): string {
  const W = opts.width ?? 720;
  const H = opts.height ?? 360;
  const top = 40;
  const left = 56;
  const right = 120;
  const bottom = 48;
  const maxH = opts.maxHealth ?? 4;
  const minutes = (r.series.length * BLOCK_SECONDS) / 60;
  const x = (block: number) => left + ((block * BLOCK_SECONDS) / 60 / minutes) * (W - left - right);
  const y = (h: number) => top + (1 - Math.min(h, maxH) / maxH) * (H - top - bottom);
  const line = (key: "protected" | "baseline") => r.series.map((s, i) => `${i === 0 ? "M" : "L"}${x(s.block).toFixed(1)},${y(s[key]).toFixed(1)}`).join(" ");
  const ethTop = Math.max(...r.series.map((s) => s.eth));
  const yEth = (p: number) => top + (1 - p / ethTop) * (H - top - bottom);
  const eth = r.series.map((s, i) => `${i === 0 ? "M" : "L"}${x(s.block).toFixed(1)},${yEth(s.eth).toFixed(1)}`).join(" ");
  const ticksY = [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4].filter((t) => t <= maxH);
  const ticksX = Array.from({ length: Math.floor(minutes) + 1 }, (_, i) => i);
  const ref = (h: number, label: string, color: string) =>
    `<line x1="${left}" x2="${W - right}" y1="${y(h)}" y2="${y(h)}" stroke="${color}" stroke-dasharray="4 4"/><text x="${W - right + 6}" y="${y(h) + 4}" fill="${color}">${label}</text>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="${W}" height="${H}" fill="white"/>
<text x="${left}" y="22" font-size="14" font-weight="bold">Health factor: ${r.scenario}, ETH ${r.series[0]!.eth} to ${r.series.at(-1)!.eth} USD, LTV ${r.start_ltv_pct}% at the start</text>
${ticksY.map((t) => `<line x1="${left - 4}" x2="${left}" y1="${y(t)}" y2="${y(t)}" stroke="#333"/><text x="${left - 8}" y="${y(t) + 4}" text-anchor="end">${t}</text>`).join("")}
${ticksX.map((t) => `<text x="${x((t * 60) / BLOCK_SECONDS)}" y="${H - bottom + 16}" text-anchor="middle">${t}</text>`).join("")}
<text x="${(left + W - right) / 2}" y="${H - 12}" text-anchor="middle">minutes (one block every ${BLOCK_SECONDS} s)</text>
<line x1="${left}" x2="${left}" y1="${top}" y2="${H - bottom}" stroke="#333"/><line x1="${left}" x2="${W - right}" y1="${H - bottom}" y2="${H - bottom}" stroke="#333"/>
${ref(1, "liquidation (1.0)", "#b00")}${ref(1.3, "trigger (1.3)", "#c80")}
<path d="${eth}" fill="none" stroke="#bbb" stroke-width="1.5"/>
<path d="${line("baseline")}" fill="none" stroke="#b00" stroke-width="2"/>
<path d="${line("protected")}" fill="none" stroke="#07a" stroke-width="2.5"/>
<text x="${W - right + 6}" y="${top + 10}" fill="#07a">protected</text>
<text x="${W - right + 6}" y="${top + 26}" fill="#b00">unprotected</text>
<text x="${W - right + 6}" y="${top + 42}" fill="#999">ETH price</text>
<text x="${W - right + 6}" y="${top + 56}" fill="#999">(its own scale)</text>
</svg>
`;
}
