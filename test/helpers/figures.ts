/**
 * Float noise in a figure: a run of 9s, or of 0s then a digit, after a significant decimal, reaching past the
 * sixth decimal (1460.19999999, 0.30000000000000004, 0.0008185883999999999). A figure derived from exact integers
 * and divided once at the edge never shows one. A figure of at most six decimals is whole micro-units and does
 * not count: 0.000001 (a micro-USDC), or 97999.999999, an aToken balance Aave 3.6 rounds down by one unit.
 */
const PATTERN = /\.\d*[1-9]\d*?(0{5,}[1-9]|9{5,})/;
const NOISE = { test: (figure: string) => PATTERN.test(figure) && (figure.split(".")[1]?.length ?? 0) > 6 };

/** every number (and numeric string) in a JSON value that carries float noise, with its path */
export function floatArtefacts(value: unknown, at = "$"): string[] {
  if (typeof value === "number") return NOISE.test(String(value)) ? [`${at} = ${value}`] : [];
  if (typeof value === "string") return /^-?\d+\.\d+$/.test(value) && NOISE.test(value) ? [`${at} = "${value}"`] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => floatArtefacts(v, `${at}[${i}]`));
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => floatArtefacts(v, `${at}.${k}`));
  return [];
}

/** the same, over text a person reads (a CLI's output, a page) */
export function textArtefacts(text: string): string[] {
  return [...text.matchAll(/-?\d+\.\d+/g)].map((m) => m[0]).filter((n) => NOISE.test(n));
}
