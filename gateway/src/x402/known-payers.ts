/**
 * Payers this service has been paid by (a settled payment in the store, whichever instance settled it):
 * kept here once known, for a while, so a paying client's requests cost no store read; an unknown payer
 * is asked of the store each time (another instance may have settled its first payment meanwhile).
 */
export class KnownPayers {
  private readonly known = new Map<string, number>();
  constructor(
    private readonly settledBefore: (payer: string) => Promise<boolean>,
    private readonly keepMs = 10 * 60_000,
    private readonly max = 10_000,
  ) {}
  add(payer: string, now = Date.now()): void {
    if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
    this.known.set(payer.toLowerCase(), now + this.keepMs);
  }
  async has(payer: string, now = Date.now()): Promise<boolean> {
    const until = this.known.get(payer.toLowerCase());
    if (until !== undefined && until > now) return true;
    if (!(await this.settledBefore(payer))) return false;
    this.add(payer, now);
    return true;
  }
}
