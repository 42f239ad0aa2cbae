/**
 * The PostgreSQL store's schema, as numbered migrations. Each replica runs the ones its database
 * lacks at start-up, one replica at a time (an advisory lock), each in its own transaction.
 * Never edit a migration that has shipped: add the next one.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: settlements, claims, signer leases, payment identifiers.
  `
  CREATE TABLE facilitator_settlements (
    key        text PRIMARY KEY,          -- what the chain consumes: the authorization
    chain_id   bigint NOT NULL,
    signer     text NOT NULL,
    tx_nonce   bigint NOT NULL,
    expect     jsonb,                     -- the Transfer that proves the payment
    hashes     text[] NOT NULL,           -- every hash broadcast for it, oldest first
    raws       text[] NOT NULL,           -- their signed bytes, until it is settled
    state      text NOT NULL CHECK (state IN ('broadcast', 'answered', 'failed', 'dropped')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX facilitator_settlements_unsettled
    ON facilitator_settlements (updated_at) WHERE state = 'broadcast';

  -- A settlement running on one replica; a lease, so a dead replica's claims expire.
  CREATE TABLE facilitator_claims (
    key        text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
  );

  -- One replica sends from a key at a time: nonces are handed out per key, in one process.
  CREATE TABLE facilitator_signers (
    address    text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
  );

  CREATE TABLE facilitator_payment_ids (
    id          text PRIMARY KEY,
    fingerprint text NOT NULL,
    answer      jsonb,                    -- the success answered, once there is one
    owner       text,                     -- the replica settling it now, if any
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
  );
  `,
  // 2: what each settlement in flight will take from a payer, seen by every replica.
  `
  CREATE TABLE facilitator_reservations (
    key        text NOT NULL,
    slot       text NOT NULL,             -- chain:token:owner(>spender)
    amount     numeric(78, 0) NOT NULL,
    owner      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Set when its transaction landed: a balance read at this block or later shows it. Kept a
    -- minute after, so a replica's recent balance read is not mistaken for one that shows it.
    landed_block numeric(78, 0),
    landed_at  timestamptz,
    PRIMARY KEY (key, slot)
  );
  CREATE INDEX facilitator_reservations_slot ON facilitator_reservations (slot);
  `,
];
