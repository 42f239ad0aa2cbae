/**
 * The PostgreSQL store's schema, as numbered migrations, each run once in its own transaction
 * (postgres-migrate.ts). Never change what a shipped migration does: add the next one.
 */

/** The network of a row an earlier version wrote (migration 18): see journal-lines.ts, withNetwork. */
const PREVIOUS_NETWORK = `CASE WHEN chain_id > 0 THEN 'eip155:' || chain_id
    WHEN key LIKE 'svm:%' THEN split_part(key, ':', 2) || ':' || split_part(key, ':', 3)
    ELSE 'unknown:' || chain_id END`;

/** The states a settlement is at its end in, that retention archives (not `landed`: still owed). */
export const FINAL_STATES = "state IN ('answered', 'failed', 'dropped')";

/**
 * Holds of other replicas that still count: their transaction may land, or landed lately, or
 * (`solana`, migrations 4 and 18) a Solana hold younger than its blockhash can live.
 */
const othersHold = (solana = "") => `
  CREATE OR REPLACE FUNCTION facilitator_others_hold(p_slots text[], p_key text, p_owner text)
  RETURNS SETOF facilitator_reservations LANGUAGE sql STABLE AS $$
    SELECT r.* FROM facilitator_reservations r
      LEFT JOIN facilitator_settlements s ON s.key = r.key
     WHERE r.slot = ANY (p_slots) AND r.key <> p_key AND r.owner <> p_owner
       AND r.created_at > now() - interval '30 minutes'
       AND (r.landed_block IS NOT NULL OR s.state = 'broadcast'${solana}
            OR EXISTS (SELECT 1 FROM facilitator_signers g
                        WHERE g.owner = r.owner AND g.expires_at > now()))
  $$;
`;

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

  ${othersHold()}

  -- The common case in one round trip: no other replica holds anything for this payer, so this
  -- replica's own ledger decides; the hold is written under the payer's lock. False: others do.
  CREATE FUNCTION facilitator_reserve_alone(p_key text, p_slots text[], p_amounts text[], p_owner text)
  RETURNS boolean LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(s, 402)) FROM unnest(p_slots) AS s ORDER BY s;
    IF EXISTS (SELECT 1 FROM facilitator_others_hold(p_slots, p_key, p_owner)) THEN
      RETURN false;
    END IF;
    INSERT INTO facilitator_reservations (key, slot, amount, owner)
      SELECT p_key, t.s, t.a::numeric, p_owner FROM unnest(p_slots, p_amounts) AS t(s, a)
    ON CONFLICT (key, slot) DO UPDATE SET amount = EXCLUDED.amount, owner = EXCLUDED.owner,
      created_at = now(), landed_block = NULL, landed_at = NULL;
    RETURN true;
  END $$;
  `,
  // 3: reverts charged to payers, so every replica's payer throttle counts them all.
  `
  CREATE TABLE facilitator_payer_reverts (
    id       bigserial PRIMARY KEY,
    chain_id bigint NOT NULL,
    payer    text NOT NULL,
    owner    text NOT NULL,
    at       timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX facilitator_payer_reverts_at ON facilitator_payer_reverts (at);
  `,
  // 4: a Solana hold counts two minutes whatever its replica: Solana replicas hold no signer
  // lease to prove they are alive, and past its blockhash (a minute or so) it can never land.
  othersHold(`
            OR (r.key LIKE 'svm:%' AND r.created_at > now() - interval '2 minutes')`),
  // 5: gas wasted (revert, out of gas, no transfer) per asset, counted by every replica.
  `
  ALTER TABLE facilitator_payer_reverts
    ADD COLUMN asset text,
    ADD COLUMN gas   numeric(78, 0),
    ADD COLUMN cause text;
  CREATE INDEX facilitator_settlements_answered_payer
    ON facilitator_settlements (chain_id, lower(expect->>'from')) WHERE state = 'answered';
  CREATE INDEX facilitator_settlements_answered_asset
    ON facilitator_settlements (chain_id, lower(expect->>'token')) WHERE state = 'answered';
  `,
  // 6: who sent or answered each settlement (owner), and `landed`: final, no success handed over.
  `
  ALTER TABLE facilitator_settlements ADD COLUMN owner text;
  ALTER TABLE facilitator_settlements DROP CONSTRAINT facilitator_settlements_state_check;
  ALTER TABLE facilitator_settlements ADD CONSTRAINT facilitator_settlements_state_check
    CHECK (state IN ('broadcast', 'answered', 'landed', 'failed', 'dropped'));
  `,
  // 7: batch-settlement: each channel's highest valid voucher, shared by every replica.
  `
  CREATE TABLE facilitator_channels (
    channel    text PRIMARY KEY,
    highest    numeric(78, 0) NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  `,
  // 8: a payer's recent answered settlements counted as one index range.
  `
  CREATE INDEX facilitator_settlements_answered_payer_at
    ON facilitator_settlements (chain_id, lower(expect->>'from'), updated_at)
    WHERE state = 'answered';
  DROP INDEX facilitator_settlements_answered_payer;
  `,
  // 9: a settlement found by any of its transactions through an index; EVM hashes lower-cased.
  `
  UPDATE facilitator_settlements
     SET hashes = ARRAY(SELECT CASE WHEN h ILIKE '0x%' THEN lower(h) ELSE h END
                          FROM unnest(hashes) WITH ORDINALITY AS t(h, i) ORDER BY i)
   WHERE EXISTS (SELECT 1 FROM unnest(hashes) AS h WHERE h ILIKE '0x%' AND h <> lower(h));
  -- Without a pending list (fastupdate): every lookup would read it all, and its pages make the
  -- planner prefer a scan of a table of thousands of rows.
  CREATE INDEX facilitator_settlements_hashes ON facilitator_settlements USING gin (hashes)
    WITH (fastupdate = off);
  `,
  // 10: batch-settlement: when a channel's balance last changed other than by a claim (unix ms).
  `
  ALTER TABLE facilitator_channels ADD COLUMN changed_at bigint NOT NULL DEFAULT 0;
  `,
  // 11: `submitted`: answered before mined, followed (bytes kept) until it lands or cannot.
  `
  ALTER TABLE facilitator_settlements DROP CONSTRAINT facilitator_settlements_state_check;
  ALTER TABLE facilitator_settlements ADD CONSTRAINT facilitator_settlements_state_check
    CHECK (state IN ('broadcast', 'submitted', 'answered', 'landed', 'failed', 'dropped'));
  `,
  // 12: what a transaction without a payment of its own was sent for, and whose its waste is.
  `
  ALTER TABLE facilitator_settlements ADD COLUMN action jsonb;
  `,
  // 13: the schemes' state, per namespace and id; batch-settlement's channels move in and their
  // table goes, so a replica of the previous version fails its raises rather than diverge.
  `
  CREATE TABLE facilitator_scheme_state (
    namespace  text NOT NULL,
    id         text NOT NULL,
    highest    numeric(78, 0) NOT NULL,
    changed_at bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, id)
  );
  INSERT INTO facilitator_scheme_state (namespace, id, highest, changed_at, updated_at)
    SELECT 'batch-settlement:voucher', channel, highest, changed_at, updated_at
      FROM facilitator_channels;
  DROP TABLE facilitator_channels;
  `,
  // 14: the bazaar catalogue (bazaar/catalogue.ts), one row per resource, with what filters read.
  `
  CREATE TABLE facilitator_catalogue (
    key            text PRIMARY KEY,
    entry          jsonb NOT NULL,
    type           text NOT NULL,
    pay_to         text NOT NULL,
    payer          text NOT NULL,
    accepts_pay_to text[] NOT NULL,
    schemes        text[] NOT NULL,
    networks       text[] NOT NULL,
    extensions     text[] NOT NULL,
    search_text    text NOT NULL,
    last_updated   bigint NOT NULL
  );
  CREATE INDEX facilitator_catalogue_recent ON facilitator_catalogue (last_updated DESC);
  CREATE INDEX facilitator_catalogue_pay_to ON facilitator_catalogue (pay_to);
  CREATE INDEX facilitator_catalogue_payer ON facilitator_catalogue (payer);
  `,
  // 15: the followed-states index covers `submitted` too (UNSETTLED_STATES), else queries scan.
  `
  DROP INDEX IF EXISTS facilitator_settlements_unsettled;
  CREATE INDEX facilitator_settlements_unsettled
    ON facilitator_settlements (updated_at) WHERE state IN ('broadcast', 'submitted');
  `,
  // 16: retention (postgres-retention.ts): final settlements move to an archive lookups still read;
  // a chore runs on one replica at a time.
  `
  CREATE TABLE facilitator_settlements_archive
    (LIKE facilitator_settlements INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
  ALTER TABLE facilitator_settlements_archive ADD PRIMARY KEY (key);
  CREATE INDEX facilitator_settlements_archive_hashes ON facilitator_settlements_archive
    USING gin (hashes) WITH (fastupdate = off);
  CREATE INDEX facilitator_settlements_final
    ON facilitator_settlements (updated_at) WHERE state IN ('answered', 'failed', 'dropped');
  CREATE TABLE facilitator_chores (
    name   text PRIMARY KEY,
    due_at timestamptz NOT NULL,
    owner  text NOT NULL
  );
  `,
  // 17: renewing a replica's payment-id leases reads an index of those with an owner, not the table.
  `
  CREATE INDEX facilitator_payment_ids_owner
    ON facilitator_payment_ids (owner) WHERE owner IS NOT NULL;
  `,
  // 18: a settlement names its chain by its CAIP-2 network, filled from the chain id (a Solana
  // key holds its network); chain_id goes, so a replica of the previous version fails its sends.
  `
  ALTER TABLE facilitator_settlements ADD COLUMN network text;
  ALTER TABLE facilitator_settlements_archive ADD COLUMN network text;
  UPDATE facilitator_settlements SET network = ${PREVIOUS_NETWORK};
  UPDATE facilitator_settlements_archive SET network = ${PREVIOUS_NETWORK};
  ALTER TABLE facilitator_settlements ALTER COLUMN network SET NOT NULL, DROP COLUMN chain_id;
  ALTER TABLE facilitator_settlements_archive
    ALTER COLUMN network SET NOT NULL, DROP COLUMN chain_id;
  CREATE INDEX facilitator_settlements_answered_payer_at
    ON facilitator_settlements (network, lower(expect->>'from'), updated_at)
    WHERE state = 'answered';
  CREATE INDEX facilitator_settlements_answered_asset
    ON facilitator_settlements (network, lower(expect->>'token')) WHERE state = 'answered';
  ${othersHold(`
            OR (r.slot LIKE 'solana:%' AND r.created_at > now() - interval '2 minutes')`)}
  `,
];

/** The followed states, spelt as the partial index facilitator_settlements_unsettled is (migration 15). */
export const UNSETTLED_STATES = "state IN ('broadcast', 'submitted')";
