-- Tenancy (docs/security.md): every space belongs to the tenant of the principal that
-- created it, recorded as `tenant` in its space.created event and never changed; its
-- work sessions, markers, details, locks and audit entries belong to the same tenant.

-- Spaces created before tenancy existed belong to one tenant, named when this
-- migration ran (`--default-tenant`, `default` unless told). It is kept, not rewritten
-- into the log: the projections read it for events that carry no tenant, so rebuild
-- and verify fold old events the same way every time.
CREATE TABLE eventlog.tenancy (
    only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    legacy_tenant  text NOT NULL
);
INSERT INTO eventlog.tenancy (legacy_tenant)
VALUES (coalesce(nullif(current_setting('roboscope.legacy_tenant', true), ''), 'default'));

-- Space keys are unique per tenant: two tenants may both have `hull-7`.
ALTER TABLE public.spaces ADD COLUMN tenant text;
UPDATE public.spaces SET tenant = (SELECT legacy_tenant FROM eventlog.tenancy);
ALTER TABLE public.spaces ALTER COLUMN tenant SET NOT NULL;
ALTER TABLE public.spaces DROP CONSTRAINT spaces_key_key;
ALTER TABLE public.spaces ADD CONSTRAINT spaces_tenant_key_key UNIQUE (tenant, key) DEFERRABLE INITIALLY IMMEDIATE;

-- Whose each space is, deleted ones included (their audit trail stays their tenant's):
-- what every authorization check reads (through a cache: a place never changes).
CREATE TABLE public.space_tenants (
    space_id  uuid PRIMARY KEY,
    tenant    text NOT NULL
);
INSERT INTO public.space_tenants (space_id, tenant)
SELECT e.stream_id, coalesce(e.data->>'tenant', (SELECT legacy_tenant FROM eventlog.tenancy))
FROM eventlog.events e
WHERE e.stream_type = 'space' AND e.type = 'space.created'
ON CONFLICT (space_id) DO NOTHING;
CREATE INDEX space_tenants_tenant_idx ON public.space_tenants (tenant, space_id);

-- Idempotency keys are scoped to (tenant, subject): a stored answer is replayed only to
-- the principal that caused it. The `actor` column names that owner as
-- `<tenant>/<subject>` (a tenant name holds no `/`).
UPDATE public.idempotency_keys SET actor = (SELECT legacy_tenant FROM eventlog.tenancy) || '/' || actor;
