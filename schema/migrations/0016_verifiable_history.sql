-- Verifiable history (DESIGN.md, "Verifiable history"; docs/investigations.md): each
-- tenant's events form a log numbered 1, 2, 3, ... (`tenant_seq`, in position order),
-- the leaves of an RFC 9162 Merkle tree over their digests (the `hash` column). The
-- service signs each append's events (append_signatures) and, at most every
-- `--checkpoint-interval`, the tree's root (checkpoints); the tree's complete subtrees
-- are kept (merkle_nodes) so that a proof costs a few index reads. Nothing here is
-- trusted: a verifier checks signatures made with a key that never enters the database.

ALTER TABLE eventlog.events ADD COLUMN tenant_seq bigint;

-- How many events each tenant's log holds. eventlog.append adds its events to the
-- tenant's row; the row's lock, held to the commit, numbers a tenant's appends in the
-- order they commit.
CREATE TABLE eventlog.tenant_logs (
    tenant  text PRIMARY KEY,
    size    bigint NOT NULL CHECK (size >= 0)
);

-- Events written before this migration are numbered in position order; they carry no
-- signature (docs/investigations.md, "Events older than signing").
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
UPDATE eventlog.events e SET tenant_seq = n.seq
FROM (SELECT position, row_number() OVER (PARTITION BY tenant ORDER BY position) AS seq
      FROM eventlog.events WHERE tenant IS NOT NULL) AS n
WHERE n.position = e.position;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;
INSERT INTO eventlog.tenant_logs (tenant, size)
SELECT tenant, max(tenant_seq) FROM eventlog.events WHERE tenant IS NOT NULL GROUP BY tenant;

-- A tenant's leaves in order, read from the index alone (the digest is included).
CREATE UNIQUE INDEX events_tenant_seq_idx ON eventlog.events (tenant, tenant_seq) INCLUDE (hash);

-- One signature per append transaction and tenant, over the statement of
-- RoboscopeProofs' AppendStatement: the events first_seq through last_seq.
CREATE TABLE eventlog.append_signatures (
    tenant     text NOT NULL,
    first_seq  bigint NOT NULL,
    last_seq   bigint NOT NULL CHECK (last_seq >= first_seq),
    signature  bytea NOT NULL,
    PRIMARY KEY (tenant, first_seq)
);

-- The complete subtrees of each tenant's tree: the subtree at `level` and `index`
-- covers the leaves index * 2^level up to (index + 1) * 2^level, 0-based.
CREATE TABLE eventlog.merkle_nodes (
    tenant  text NOT NULL,
    level   smallint NOT NULL,
    index   bigint NOT NULL,
    hash    bytea NOT NULL,
    PRIMARY KEY (tenant, level, index)
);

-- The signed checkpoints (c2sp.org/tlog-checkpoint notes), newest per tenant first.
CREATE TABLE eventlog.checkpoints (
    tenant     text NOT NULL,
    size       bigint NOT NULL,
    root       bytea NOT NULL,
    note       text NOT NULL,
    signed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant, size)
);

-- eventlog.append now answers each event's tenant, number and digest too: its new
-- definition (schema/functions/append.sql) cannot replace one of another result type.
DROP FUNCTION IF EXISTS eventlog.append(jsonb);
