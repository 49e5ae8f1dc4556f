/**
 * Leases: a claim held by a live request expires if its holder dies, so the
 * work can be taken over instead of staying stuck. The holder renews it while
 * it works; every write that ends the claim names the holder (fencing), so a
 * holder that lost its lease cannot overwrite its successor.
 *
 * A holder names the process that holds it (`<kind>_<instance>.<uuid>`), and
 * every gateway process heartbeats in the store (store/instance-store.ts): a
 * claim whose holder's instance stopped heartbeating (killed, or this instance
 * before a restart) is taken over within INSTANCE_GONE_AFTER_MS, without
 * waiting for the lease to run out. A holder of no known instance waits for
 * its lease, as before.
 */
import { randomBytes, randomUUID } from "node:crypto";

export const LEASE_MS = Number(process.env.LEASE_MS ?? 30_000);

export const leaseUntil = (now: Date, ms = LEASE_MS): string => new Date(now.getTime() + ms).toISOString();

/** this process, as its holders name it (a new one at every start) */
export const INSTANCE_ID = `ins${randomBytes(6).toString("hex")}`;

/** a holder for a claim of this process: `kind` names what it holds (req, pay, pid, slot) */
export const newHolder = (kind: string): string => `${kind}_${INSTANCE_ID}.${randomUUID()}`;

/** the instance a holder belongs to, or undefined for a holder that names none */
export const instanceOf = (holder: string | null | undefined): string | undefined => holder?.match(/^[a-z]+_(ins[0-9a-f]{12})\./)?.[1];
