/**
 * The signer's refusals in tests: the message of the PolicyRefusal a call
 * throws, and a failure when it throws another error or none.
 */
import { expect } from "vitest";
import { PolicyRefusal } from "@treasury/core/actions/signer-rule";

export function refusalOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyRefusal);
    return (e as Error).message;
  }
  throw new Error("expected a refusal");
}
