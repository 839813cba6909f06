-- What the serving processes' role may do (`migrate --service-role NAME`), granted again
-- after every migration so new tables are covered. The role owns nothing: the migration
-- role owns the schema, so the service cannot ALTER a table, DISABLE the append-only
-- trigger or DROP anything, and on the event log it may only read and append.
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
    -- The log: read and append, nothing else.
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA eventlog FROM %I', service);
    EXECUTE format('GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA eventlog TO %I', service);
    -- The projections and stored idempotent answers: what the service keeps current.
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA public FROM %I', service);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %I', service);
    -- What the schema went through is the migration role's to record.
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON public.schema_migrations, public.schema_functions FROM %I', service);
    -- Revocations are lifted, never erased: their rows are the record of who did what.
    IF to_regclass('public.token_revocations') IS NOT NULL THEN
        EXECUTE format('REVOKE DELETE ON public.token_revocations FROM %I', service);
    END IF;
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA eventlog, public TO %I', service);
    EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA eventlog, public TO %I', service);
END
$grants$;
