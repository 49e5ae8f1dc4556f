/**
 * Versioned schema migrations, SQLite's history (PostgreSQL's is in
 * postgres-migrations.ts, same versions from 5 on). Append only: a released
 * migration is never edited; a change is a new entry with the next version,
 * in both lists.
 */
import type { Migration } from "./migration";

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "foundation",
    sql: `
      CREATE TABLE treasuries (
        id TEXT PRIMARY KEY,
        wallet_address TEXT NOT NULL,
        chain TEXT NOT NULL CHECK (chain IN ('arbitrum','base')),
        preset TEXT NOT NULL CHECK (preset IN ('conservative','balanced','aggressive')),
        execution_mode TEXT NOT NULL CHECK (execution_mode IN ('wallet','managed')),
        status TEXT NOT NULL,
        origin TEXT NOT NULL,
        btc_units TEXT NOT NULL DEFAULT '0',
        eth_units TEXT NOT NULL DEFAULT '0',
        usdc_micro TEXT NOT NULL DEFAULT '0',
        debt_micro TEXT NOT NULL DEFAULT '0',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX treasuries_wallet ON treasuries (wallet_address);

      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('sandbox','live')),
        last4 TEXT NOT NULL,
        treasury_id TEXT REFERENCES treasuries(id),
        access_request_id TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT
      );
      CREATE INDEX api_keys_treasury ON api_keys (treasury_id);

      CREATE TABLE access_requests (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL CHECK (status IN ('received','in_review','closed')),
        operator_name TEXT NOT NULL,
        operator_email TEXT NOT NULL,
        use_case TEXT NOT NULL,
        agent_name TEXT,
        agent_framework TEXT,
        company TEXT,
        wallet_address TEXT,
        chain TEXT,
        expected_monthly_volume_usdc TEXT,
        submitted_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        reviewer TEXT,
        outcome TEXT CHECK (outcome IS NULL OR outcome IN ('approved','declined')),
        outcome_note TEXT,
        closed_at TEXT
      );

      CREATE TABLE access_request_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        access_request_id TEXT NOT NULL REFERENCES access_requests(id),
        from_status TEXT,
        to_status TEXT NOT NULL,
        actor TEXT NOT NULL,
        note TEXT,
        at TEXT NOT NULL
      );

      CREATE TABLE outbox (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        recipient TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT,
        related_id TEXT,
        created_at TEXT NOT NULL,
        delivered_at TEXT
      );

      CREATE TABLE fee_audit (
        id TEXT PRIMARY KEY,
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        action TEXT NOT NULL,
        amount_micro TEXT NOT NULL,
        fee_micro TEXT NOT NULL,
        fee_bps INTEGER NOT NULL,
        fee_basis TEXT NOT NULL,
        fee_tier TEXT NOT NULL,
        trigger TEXT NOT NULL,
        execution_ref TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX fee_audit_treasury ON fee_audit (treasury_id, created_at);

      CREATE TABLE fee_ratchet (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        tier_index INTEGER NOT NULL,
        platform_volume_micro TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      INSERT INTO fee_ratchet (id, tier_index, platform_volume_micro, updated_at) VALUES (1, 0, '0', '1970-01-01T00:00:00.000Z');

      -- the ratchet only moves one way: the database refuses a lower tier
      CREATE TRIGGER fee_ratchet_one_way BEFORE UPDATE ON fee_ratchet
      WHEN NEW.tier_index < OLD.tier_index
      BEGIN SELECT RAISE(ABORT, 'fee ratchet is one-way'); END;
    `,
  },
  {
    version: 2,
    name: "actions_envelopes_idempotency",
    sql: `
      CREATE TABLE idempotency_keys (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('in_progress','completed')),
        status_code INTEGER,
        headers TEXT,
        body TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (scope, key)
      );
      CREATE INDEX idempotency_expiry ON idempotency_keys (expires_at);

      CREATE TABLE envelopes (
        tx_id TEXT PRIMARY KEY,
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        action TEXT NOT NULL,
        amount_micro TEXT NOT NULL,
        fee_micro TEXT NOT NULL,
        params TEXT NOT NULL,
        chain TEXT NOT NULL,
        chain_id INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('awaiting_signature','relayed','expired')),
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        completed_at TEXT
      );
      CREATE INDEX envelopes_treasury ON envelopes (treasury_id, status);

      CREATE TABLE envelope_steps (
        tx_id TEXT PRIMARY KEY,
        envelope_tx_id TEXT NOT NULL REFERENCES envelopes(tx_id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        to_address TEXT NOT NULL,
        data TEXT NOT NULL,
        value TEXT NOT NULL,
        summary TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('awaiting_signature','relayed')),
        tx_hash TEXT,
        signed_transaction TEXT,
        receipt TEXT,
        relayed_at TEXT,
        UNIQUE (envelope_tx_id, seq)
      );

      CREATE TABLE executions (
        id TEXT PRIMARY KEY,
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        action TEXT NOT NULL,
        amount_micro TEXT NOT NULL,
        fee_micro TEXT NOT NULL,
        origin TEXT NOT NULL,
        envelope_tx_id TEXT,
        receipt TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX executions_treasury ON executions (treasury_id, created_at);
    `,
  },
  {
    version: 3,
    name: "x402_payments",
    sql: `
      CREATE TABLE x402_payments (
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        route TEXT NOT NULL,
        amount_atomic TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('locked','settled')),
        treasury_id TEXT,
        transaction_hash TEXT,
        outcome_status INTEGER,
        created_at TEXT NOT NULL,
        settled_at TEXT,
        PRIMARY KEY (payer, nonce)
      );
    `,
  },
  {
    version: 4,
    name: "delegations_protection",
    sql: `
      CREATE TABLE delegations (
        treasury_id TEXT PRIMARY KEY REFERENCES treasuries(id),
        safe TEXT NOT NULL,
        module TEXT NOT NULL,
        automation TEXT NOT NULL,
        registered_at TEXT NOT NULL,
        first_approved_at TEXT,
        protect_below_health REAL,
        armed INTEGER NOT NULL DEFAULT 1
      );
      CREATE TABLE protection_actions (
        id TEXT PRIMARY KEY,
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        status TEXT NOT NULL,
        reason TEXT,
        health_before REAL,
        ltv_before REAL,
        ltv_after REAL,
        repay_micro TEXT,
        tx_hashes TEXT,
        gas_usd REAL NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
      );
      CREATE INDEX protection_actions_treasury ON protection_actions (treasury_id, created_at);
    `,
  },
  {
    version: 5,
    name: "trust_in_the_money_path",
    sql: `
      -- who proved control of a treasury's wallet: 'unproven' (a bare registration, reachable only with its own
      -- key), 'proven' (a signed ownership statement, EIP-712 or EIP-1271), 'paid' (created by the payer's own x402 payment)
      ALTER TABLE treasuries ADD COLUMN ownership TEXT NOT NULL DEFAULT 'unproven' CHECK (ownership IN ('unproven','proven','paid'));
      ALTER TABLE treasuries ADD COLUMN ownership_proof TEXT;
      UPDATE treasuries SET ownership = 'paid' WHERE origin = 'x402_payer';
      CREATE INDEX treasuries_wallet_ownership ON treasuries (lower(wallet_address), ownership);

      -- a signed statement's nonce is good once per signer
      CREATE TABLE signed_nonces (
        signer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        purpose TEXT NOT NULL,
        used_at TEXT NOT NULL,
        PRIMARY KEY (signer, nonce)
      );

      -- the conflict slot of a treasury: claimed atomically with the conflict check, before any payment is settled
      CREATE TABLE treasury_slots (
        treasury_id TEXT PRIMARY KEY REFERENCES treasuries(id),
        holder TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );

      -- a payment settled for an Idempotency-Key whose request then did not execute: the key's retry is not charged again
      CREATE TABLE prepaid_requests (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (scope, key)
      );

      -- the envelope's fee is the fee: kept with it, recorded as signed
      ALTER TABLE envelopes ADD COLUMN fee_bps INTEGER;
      ALTER TABLE envelopes ADD COLUMN fee_basis TEXT;

      -- steps gain 'broadcasting' (claimed, sent or about to be, reconciled with the chain) and the nonce they were signed with
      CREATE TABLE envelope_steps_new (
        tx_id TEXT PRIMARY KEY,
        envelope_tx_id TEXT NOT NULL REFERENCES envelopes(tx_id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        to_address TEXT NOT NULL,
        data TEXT NOT NULL,
        value TEXT NOT NULL,
        summary TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('awaiting_signature','broadcasting','relayed')),
        tx_hash TEXT,
        signed_transaction TEXT,
        receipt TEXT,
        relayed_at TEXT,
        signer TEXT,
        tx_nonce INTEGER,
        broadcast_at TEXT,
        failed_attempts TEXT NOT NULL DEFAULT '[]',
        UNIQUE (envelope_tx_id, seq)
      );
      INSERT INTO envelope_steps_new (tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status, tx_hash, signed_transaction, receipt, relayed_at)
        SELECT tx_id, envelope_tx_id, seq, kind, to_address, data, value, summary, status, tx_hash, signed_transaction, receipt, relayed_at FROM envelope_steps;
      DROP TABLE envelope_steps;
      ALTER TABLE envelope_steps_new RENAME TO envelope_steps;
      CREATE UNIQUE INDEX envelope_steps_hash ON envelope_steps (tx_hash) WHERE tx_hash IS NOT NULL;

      -- only live, settled fee-bearing executions move the platform volume; sandbox ones are audited as such
      ALTER TABLE fee_audit ADD COLUMN environment TEXT NOT NULL DEFAULT 'sandbox' CHECK (environment IN ('sandbox','live'));
      ALTER TABLE fee_audit ADD COLUMN counts_toward_volume INTEGER NOT NULL DEFAULT 0;
      -- volume counted before this release came from sandbox executions, which count for nothing: recount it
      DROP TRIGGER fee_ratchet_one_way;
      UPDATE fee_ratchet SET tier_index = 0, platform_volume_micro = '0' WHERE id = 1;
      CREATE TRIGGER fee_ratchet_one_way BEFORE UPDATE ON fee_ratchet
      WHEN NEW.tier_index < OLD.tier_index
      BEGIN SELECT RAISE(ABORT, 'fee ratchet is one-way'); END;

      -- a delegation is attached only with the Safe's own signature; one proven delegation per Safe
      ALTER TABLE delegations ADD COLUMN chain TEXT;
      ALTER TABLE delegations ADD COLUMN proof TEXT;
      ALTER TABLE delegations ADD COLUMN proven_at TEXT;
      CREATE UNIQUE INDEX delegations_one_per_safe ON delegations (chain, lower(safe)) WHERE proven_at IS NOT NULL;
      ALTER TABLE protection_actions ADD COLUMN safe TEXT;
      UPDATE protection_actions SET safe = (SELECT safe FROM delegations d WHERE d.treasury_id = protection_actions.treasury_id);
      CREATE INDEX protection_actions_safe ON protection_actions (lower(safe), created_at);
    `,
  },
  {
    version: 6,
    name: "many_instances",
    sql: `
      -- rate-limit windows shared by every instance: one counter per (limiter, identity)
      CREATE TABLE rate_limit_hits (
        key TEXT PRIMARY KEY,
        hits INTEGER NOT NULL,
        reset_at INTEGER NOT NULL
      );
      -- an in-progress Idempotency-Key is held by a lease its request renews; a dead request's lease expires and the key is reclaimed
      ALTER TABLE idempotency_keys ADD COLUMN lease_expires_at TEXT;
      ALTER TABLE idempotency_keys ADD COLUMN lease_holder TEXT;
      -- a locked x402 payment is held by a lease too: a request that died mid-settlement is taken over (and settled once, or served once)
      ALTER TABLE x402_payments ADD COLUMN lease_holder TEXT;
      ALTER TABLE x402_payments ADD COLUMN lease_expires_at TEXT;
      -- a protection repayment is claimed (with its transaction hash, before sending) so two engines never act twice on one trigger
      CREATE TABLE protection_claims (
        treasury_id TEXT PRIMARY KEY REFERENCES treasuries(id),
        holder TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('deciding','broadcasting')),
        action_id TEXT NOT NULL,
        tx_hash TEXT,
        repay_micro TEXT,
        detail TEXT,
        claimed_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: "fee_audit_page_order",
    // SQLite's fee_audit_treasury index (treasury_id, created_at) already orders ties by the implicit rowid
    sql: `SELECT 1;`,
  },
  {
    version: 8,
    name: "safe_transactions_console",
    sql: `
      -- a managed action on an operator's Safe: a Safe transaction its owners sign, the service executes (issue 15)
      CREATE TABLE safe_transactions (
        id TEXT PRIMARY KEY,
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        execution_id TEXT NOT NULL,
        chain TEXT NOT NULL,
        safe TEXT NOT NULL,
        action TEXT NOT NULL,
        amount_micro TEXT NOT NULL,
        fee_micro TEXT NOT NULL,
        request TEXT NOT NULL,
        safe_tx TEXT NOT NULL,
        safe_tx_hash TEXT NOT NULL,
        calls TEXT NOT NULL,
        signatures TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('awaiting_signatures','executing','executed','failed','expired')),
        holder TEXT,
        lease_expires_at TEXT,
        sent TEXT,
        tx_hash TEXT,
        failure TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX safe_transactions_treasury ON safe_transactions (treasury_id, created_at);
      CREATE INDEX safe_transactions_open ON safe_transactions (status) WHERE status IN ('awaiting_signatures','executing');

      -- a treasury's Aave position over time, sampled by the protection engine (the console's chart)
      CREATE TABLE position_samples (
        treasury_id TEXT NOT NULL REFERENCES treasuries(id),
        at TEXT NOT NULL,
        ltv REAL NOT NULL,
        health_score REAL NOT NULL,
        collateral_micro TEXT NOT NULL,
        debt_micro TEXT NOT NULL,
        PRIMARY KEY (treasury_id, at)
      );
      -- console sessions: an API key kind of its own (sk_console_), bound to the Safe's treasury, short-lived
      CREATE TABLE api_keys_new (
        id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('sandbox','live','console')),
        last4 TEXT NOT NULL,
        treasury_id TEXT REFERENCES treasuries(id),
        access_request_id TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT
      );
      INSERT INTO api_keys_new (id, key_hash, kind, last4, treasury_id, access_request_id, created_at, expires_at, revoked_at)
        SELECT id, key_hash, kind, last4, treasury_id, access_request_id, created_at, expires_at, revoked_at FROM api_keys;
      DROP TABLE api_keys;
      ALTER TABLE api_keys_new RENAME TO api_keys;
      CREATE INDEX api_keys_treasury ON api_keys (treasury_id);
    `,
  },
  {
    version: 9,
    name: "safe_execution_gas",
    sql: `
      -- what an executed (or reverted) Safe transaction cost the automation key, for the per-Safe monthly gas budget
      ALTER TABLE safe_transactions ADD COLUMN gas_usd REAL;
    `,
  },
  {
    version: 10,
    name: "console_session_owner",
    sql: `
      -- the owner a console session (sk_console_) was issued to, checked again on chain while the key is used,
      -- and why a key was revoked (owner_removed: its owner left the Safe)
      ALTER TABLE api_keys ADD COLUMN owner_address TEXT;
      ALTER TABLE api_keys ADD COLUMN revoked_reason TEXT;
    `,
  },
  {
    version: 11,
    name: "instances_and_pending_settlements",
    sql: `
      -- the gateway processes sharing this store, each with its heartbeat (store/instance-store.ts): a claim whose
      -- holder's process stopped heartbeating is taken over without waiting for its lease
      CREATE TABLE instances (
        id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
      );
      -- a payment whose settlement's outcome is not known (the facilitator did not answer): the proof and
      -- requirements it was sent with, so its retry or its key's credit settles it again (at most once on chain)
      ALTER TABLE x402_payments ADD COLUMN pending_settlement TEXT;
    `,
  },
  {
    version: 12,
    name: "delegation_upgrade",
    sql: `
      -- a newer ProtectionModule the Safe signed for while its current one is enabled: staged here, the current
      -- one keeps protecting until the owners enable the new one (its module, threshold, proof and time, JSON)
      ALTER TABLE delegations ADD COLUMN pending_upgrade TEXT;
    `,
  },
];
