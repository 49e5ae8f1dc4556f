import { describe, expect, it } from "vitest";
import { aaveVersionOf } from "./aave-versions";

describe("aaveVersionOf", () => {
  it("names the revisions the table holds, and no other (an unknown revision is null, not its neighbour's version)", () => {
    expect([aaveVersionOf(1), aaveVersionOf(10), aaveVersionOf(11)]).toEqual(["3.0", "3.6", "3.7"]);
    expect([aaveVersionOf(0), aaveVersionOf(9), aaveVersionOf(12)]).toEqual([null, null, null]);
  });
});
