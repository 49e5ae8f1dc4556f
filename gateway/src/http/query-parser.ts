/**
 * The query string parser: Express's own ("extended": qs, with prototypes allowed and up to 1,000 array
 * items), with a shortcut for the common query, name=value pairs of plain characters with each name once,
 * whose qs result is the pairs as they are (nothing to decode, no brackets, no repeated name to gather into
 * an array). qs was 3.5% of `GET /api/v1/public/liquidation-distance` in the bench's profile. Every other
 * query goes to Express's parser, as before; query-parser.test.ts compares the two on generated queries. No
 * query at all (most requests) is answered without calling qs (its options are normalized on every call).
 */

/** at most this many plain pairs take the shortcut */
const MAX_PLAIN_PAIRS = 16;
const PLAIN_PAIR = /^([A-Za-z0-9_-]+)=([A-Za-z0-9_.-]*)$/;

export function withPlainQueryShortcut(extended: (query: string) => unknown): (query: string) => unknown {
  return (query) => {
    // no query at all (a URL without `?`: Express passes null) or an empty one: qs answers a fresh plain object
    if (query === null || query === undefined || query === "") return {};
    if (typeof query !== "string" || query.length > 1_024) return extended(query);
    const pairs = query.split("&");
    if (pairs.length > MAX_PLAIN_PAIRS) return extended(query);
    const parsed: Record<string, string> = {};
    for (const pair of pairs) {
      const m = PLAIN_PAIR.exec(pair);
      // a name given twice (an array), or one that is not an own property of a plain object: qs's way
      if (!m || m[1] === "__proto__" || Object.prototype.hasOwnProperty.call(parsed, m[1]!)) return extended(query);
      parsed[m[1]!] = m[2]!;
    }
    return parsed;
  };
}
