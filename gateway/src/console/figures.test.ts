import { describe, expect, it } from "vitest";
import { figure, money, when } from "./figures";

describe("the console's figures", () => {
  it("money: cents with thousands grouped; under a cent, two significant digits; float noise gone", () => {
    expect(money(29862.500099)).toBe("29,862.50");
    expect(money(1460.19999999)).toBe("1,460.20");
    expect(money(0.0008185883999999999)).toBe("0.00082");
    expect(money(0)).toBe("0.00");
    expect(money(1e-7)).toBe("0.0000001");
    expect(money(undefined)).toBe("n/a");
  });
  it("figure: two decimals at most; when: the ISO time in the reader's zone", () => {
    expect(figure(49.999999999)).toBe("50");
    expect(figure(1.305)).toBe("1.31");
    expect(when("2026-11-27T10:45:00.000Z", "UTC")).toBe("Nov 27, 2026, 10:45 AM");
    expect(when("2026-11-27T10:45:00.000Z", "Asia/Tokyo")).toBe("Nov 27, 2026, 7:45 PM");
    expect(when("not a time")).toBe("n/a");
  });
});
