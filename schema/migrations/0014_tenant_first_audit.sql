-- Tenant-first audit indexes (issue 45): every event names its space's tenant (set by
-- eventlog.append from the space's tenant, which never changes), and the audit trail's
-- filters are served by indexes that start with it, so a tenant's audit page, filtered
-- or not, costs by the tenant's own events and never walks every tenant's log.

ALTER TABLE eventlog.events ADD COLUMN tenant text;

-- Events written before this migration get the tenant of their space.
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
UPDATE eventlog.events e SET tenant = t.tenant FROM public.space_tenants t WHERE t.space_id = e.space_id;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;

-- The audit trail always reads within one tenant: these replace the indexes of
-- 0008_audit_indexes.sql on actor, type and time (an operator's read of the whole log
-- by actor, rare, may scan).
DROP INDEX eventlog.events_actor_idx;
DROP INDEX eventlog.events_type_idx;
DROP INDEX eventlog.events_recorded_at_idx;
CREATE INDEX events_tenant_idx ON eventlog.events (tenant, position);
CREATE INDEX events_tenant_actor_idx ON eventlog.events (tenant, (metadata->>'actor'), position);
CREATE INDEX events_tenant_type_idx ON eventlog.events (tenant, type, position);
CREATE INDEX events_tenant_recorded_at_idx ON eventlog.events (tenant, recorded_at, position);
