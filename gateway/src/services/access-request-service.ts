/**
 * Human-reviewed live access (spec 2.11, 3.1, 4.9): received -> in_review ->
 * closed, moved only by a reviewer through the admin API. Closing with
 * approval issues a live key (sk_live_) that goes to the operator through the
 * outbox, never through the public status endpoint.
 */
import { getAddress } from "viem";
import { EMPTY_HOLDINGS } from "@treasury/core/domain/portfolio";
import { TreasuryError } from "@treasury/core/lib/errors";
import { newId } from "@treasury/core/lib/ids";
import type { AccessOutcome, AccessRequestRecord, AccessRequestStatus } from "../store/access-request-store";
import type { TreasuryChain } from "@treasury/core/contracts/chains";
import { issueApiKey } from "./api-keys";
import type { ServiceContext } from "./context";

export const REVIEW_PROCESS =
  "Every request is reviewed by a human. A reviewer picks it up (in_review), contacts the operator, and closes it; " +
  "the operator receives the outcome and, when approved, live credentials by e-mail. Review typically completes within 2 business days.";

export const STATUS_MEANING: Record<AccessRequestStatus, string> = {
  received: "The request is queued for human review.",
  in_review: "A human reviewer has picked the request up and is contacting the operator.",
  closed: "Review is complete; the operator was contacted with the outcome and, when approved, credentials.",
};

export interface AccessRequestInput {
  operator_name: string;
  operator_email: string;
  use_case: string;
  agent_name?: string | undefined;
  agent_framework?: string | undefined;
  company?: string | undefined;
  wallet_address?: string | undefined;
  chain?: TreasuryChain | undefined;
  expected_monthly_volume_usdc?: number | undefined;
}

export class AccessRequestService {
  constructor(private readonly ctx: ServiceContext<"accessRequests" | "apiKeys" | "events" | "outbox" | "treasuries">) {}

  async submit(input: AccessRequestInput) {
    const now = this.ctx.clock.now().toISOString();
    const record: AccessRequestRecord = {
      id: newId("agr"),
      status: "received",
      operatorName: input.operator_name,
      operatorEmail: input.operator_email,
      useCase: input.use_case,
      agentName: input.agent_name ?? null,
      agentFramework: input.agent_framework ?? null,
      company: input.company ?? null,
      walletAddress: input.wallet_address ? getAddress(input.wallet_address) : null,
      chain: input.chain ?? null,
      expectedMonthlyVolumeUsdc: input.expected_monthly_volume_usdc === undefined ? null : String(input.expected_monthly_volume_usdc),
      submittedAt: now,
      updatedAt: now,
      reviewer: null,
      outcome: null,
      outcomeNote: null,
      closedAt: null,
    };
    await this.ctx.stores.accessRequests.insert(record, "applicant");
    return this.publicView(record);
  }

  async get(id: string): Promise<AccessRequestRecord> {
    const r = await this.ctx.stores.accessRequests.get(id);
    if (!r) throw new TreasuryError("access_request_not_found", `access request ${id} does not exist`);
    return r;
  }

  /** What the public status endpoint shows: no reviewer, no outcome note, no credentials. */
  publicView(r: AccessRequestRecord) {
    return {
      object: "agent_access_request" as const,
      id: r.id,
      status: r.status,
      status_url: this.ctx.links.url(`/api/v1/agents/apply/${r.id}`),
      submitted_at: r.submittedAt,
      updated_at: r.updatedAt,
      review_process: REVIEW_PROCESS,
      status_meaning: { ...STATUS_MEANING },
      docs: this.ctx.links.url("/docs"),
    };
  }

  /** The reviewer's list (admin API): every request, or those in one status, in the reviewer's view. */
  async adminList(status?: AccessRequestRecord["status"]) {
    return await Promise.all((await this.ctx.stores.accessRequests.list(status)).map((r) => this.adminView(r)));
  }

  /** Messages to operators not delivered yet (admin API; a delivery worker sends them). */
  pendingMessages() {
    return this.ctx.stores.outbox.pending();
  }

  /** A message delivered (admin API): its body, which may hold a key, is erased; not_found unless it was pending. */
  async markDelivered(id: string): Promise<void> {
    if (!(await this.ctx.stores.outbox.markDelivered(id, this.ctx.clock.now().toISOString()))) {
      throw new TreasuryError("not_found", `no pending message ${id}`);
    }
  }

  /** The reviewer's view (admin API). */
  async adminView(r: AccessRequestRecord) {
    return {
      ...this.publicView(r),
      operator_name: r.operatorName,
      operator_email: r.operatorEmail,
      use_case: r.useCase,
      agent_name: r.agentName,
      agent_framework: r.agentFramework,
      company: r.company,
      wallet_address: r.walletAddress,
      chain: r.chain,
      expected_monthly_volume_usdc: r.expectedMonthlyVolumeUsdc === null ? null : Number(r.expectedMonthlyVolumeUsdc),
      reviewer: r.reviewer,
      outcome: r.outcome,
      outcome_note: r.outcomeNote,
      closed_at: r.closedAt,
      events: await this.ctx.stores.accessRequests.events(r.id),
    };
  }

  async startReview(id: string, reviewer: string) {
    const r = await this.get(id);
    const now = this.ctx.clock.now().toISOString();
    if (!(await this.ctx.stores.accessRequests.transition(id, "received", "in_review", { reviewer }, now))) {
      throw new TreasuryError("invalid_transition", `access request is ${r.status}; only a received request can move to in_review`);
    }
    return this.adminView(await this.get(id));
  }

  /**
   * in_review -> closed. Approval issues a live key bound to `treasuryId`, or
   * to a new wallet-mode treasury for the request's wallet when it named one,
   * and queues the operator's e-mail (outcome and key) in the outbox.
   */
  async close(id: string, reviewer: string, outcome: AccessOutcome, note: string | undefined, treasuryId: string | undefined) {
    const now = this.ctx.clock.now();
    const nowIso = now.toISOString();
    const result = await this.ctx.tx.transaction(async () => {
      const r = await this.get(id);
      if (r.status !== "in_review") {
        throw new TreasuryError("invalid_transition", `access request is ${r.status}; only an in_review request can be closed`);
      }
      let boundTreasury: string | null = null;
      let keyText: string | null = null;
      if (outcome === "approved") {
        if (treasuryId) {
          if (!(await this.ctx.stores.treasuries.get(treasuryId))) throw new TreasuryError("treasury_not_found", `treasury ${treasuryId} does not exist`);
          boundTreasury = treasuryId;
        } else if (r.walletAddress) {
          boundTreasury = newId("trs");
          await this.ctx.stores.treasuries.insert({
            id: boundTreasury,
            walletAddress: r.walletAddress as `0x${string}`,
            chain: (r.chain as TreasuryChain | null) ?? "arbitrum",
            preset: "balanced",
            executionMode: "wallet",
            status: "active",
            origin: "operator",
            ownership: "unproven",
            holdings: EMPTY_HOLDINGS,
            createdAt: nowIso,
            updatedAt: nowIso,
          });
        }
        const key = await issueApiKey(this.ctx.stores.apiKeys, { kind: "live", treasuryId: boundTreasury, accessRequestId: id, now, ttlMs: null });
        keyText = key.key;
      }
      await this.ctx.stores.accessRequests.transition(id, "in_review", "closed", { reviewer, outcome, outcomeNote: note ?? null, closedAt: nowIso }, nowIso);
      await this.ctx.stores.outbox.insert({
        id: newId("msg"),
        kind: outcome === "approved" ? "access_approved" : "access_declined",
        recipient: r.operatorEmail,
        subject: outcome === "approved" ? "Your live access request was approved" : "Your live access request was reviewed",
        body: JSON.stringify({
          access_request_id: id,
          outcome,
          note: note ?? null,
          ...(keyText ? { api_key: keyText, treasury_id: boundTreasury } : {}),
        }),
        relatedId: id,
        createdAt: nowIso,
        deliveredAt: null,
      });
      // a treasury's log: a request bound to one (approved) tells it; a declined request has no treasury to tell
      if (boundTreasury) {
        await this.ctx.stores.events.append(boundTreasury, "access_request.status_changed", { access_request_id: id, status: outcome }, { now });
      }
      return { treasuryId: boundTreasury };
    });
    return { ...(await this.adminView(await this.get(id))), live_key_issued: outcome === "approved", treasury_id: result.treasuryId };
  }
}
