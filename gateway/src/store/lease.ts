/**
 * Leases: a claim held by a live request expires if its holder dies, so the
 * work can be taken over instead of staying stuck. The holder renews it while
 * it works; every write that ends the claim names the holder (fencing), so a
 * holder that lost its lease cannot overwrite its successor.
 */
export const LEASE_MS = Number(process.env.LEASE_MS ?? 30_000);

export const leaseUntil = (now: Date, ms = LEASE_MS): string => new Date(now.getTime() + ms).toISOString();
