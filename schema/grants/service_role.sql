-- What the serving processes' role may do (`migrate --service-role NAME`), granted again
-- after every migration so new tables are covered. The role owns nothing: the migration
-- role owns the schema, so the service cannot ALTER a table, DISABLE the append-only
-- trigger or DROP anything. It reads the log and the projections and writes neither:
-- `eventlog.append` (SECURITY DEFINER) is its only way to change them, so it cannot
-- insert an event of its own making nor move a space to another tenant.
DO $grants$
DECLARE
    service text := current_setting('roboscope.service_role');
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = service) THEN
        RAISE EXCEPTION 'role % does not exist: create it (LOGIN, NOSUPERUSER) before migrating', service
            USING ERRCODE = '42704';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = service AND (rolsuper OR rolbypassrls)) THEN
        RAISE EXCEPTION 'role % is a superuser: the service role must not be one', service;
    END IF;
    IF service = current_user THEN
        RAISE EXCEPTION 'the service role must not be the role that migrates (and owns the schema)';
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), service);
    EXECUTE format('GRANT USAGE ON SCHEMA eventlog, public TO %I', service);
    -- The log and the projections: read; `eventlog.append` writes them.
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA eventlog FROM %I', service);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA eventlog TO %I', service);
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA public FROM %I', service);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I', service);
    -- What the service writes itself: the answers of keyed writes (stored with a write,
    -- purged when old), and revocations, lifted but never erased (their rows are the
    -- record of who did what).
    EXECUTE format('GRANT INSERT, DELETE ON public.idempotency_keys TO %I', service);
    IF to_regclass('public.token_revocations') IS NOT NULL THEN
        EXECUTE format('GRANT INSERT, UPDATE ON public.token_revocations TO %I', service);
    END IF;
    -- Verifiable history: the service signs its appends and checkpoints with a key the
    -- database never sees, so a row the service role writes here proves nothing unless
    -- that key signed it.
    IF to_regclass('eventlog.checkpoints') IS NOT NULL THEN
        EXECUTE format('GRANT INSERT ON eventlog.append_signatures, eventlog.merkle_nodes, eventlog.checkpoints TO %I',
                       service);
    END IF;
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA eventlog, public TO %I', service);
    EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA eventlog, public TO %I', service);
END
$grants$;
