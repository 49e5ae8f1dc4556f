/**
 * This process no longer holds its claim (a protection trigger, a Safe transaction): its lease lapsed and
 * another engine or executor took it over, so this one stops where it is and the new holder finishes the
 * work (store/lease.ts; the stores' writes are fenced by holder).
 */
export class LostClaim extends Error {
  /** `claim`: what was claimed ("this trigger"); `by`: who holds it now ("engine") */
  constructor(claim: string, by: string) {
    super(`the claim on ${claim} passed to another ${by}`);
  }
}
LostClaim.prototype.name = "LostClaim";
