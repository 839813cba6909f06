-- Token revocations (issue 46, docs/operations.md "Running many customers"): what an
-- operator or a tenant's administrator said no longer holds. Rows are never deleted: a
-- lifted revocation keeps who made it, who lifted it and when, as the record of both.
-- Every change is announced on `roboscope_revocations`, so every process reloads the
-- list at once (and survives a restart, reading it at start).
CREATE TABLE public.token_revocations (
    id uuid PRIMARY KEY,
    tenant text,
    subject text,
    kid text,
    issued_before timestamptz NOT NULL,
    reason text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL,
    lifted_at timestamptz,
    lifted_by text,
    -- A tenant's tokens, a subject of a tenant, or a key's: never everyone's by accident.
    CHECK (tenant IS NOT NULL OR kid IS NOT NULL),
    CHECK (subject IS NULL OR tenant IS NOT NULL)
);

-- The processes load what is in force; listings go by tenant, newest first.
CREATE INDEX token_revocations_in_force_idx ON public.token_revocations (created_at) WHERE lifted_at IS NULL;
CREATE INDEX token_revocations_tenant_idx ON public.token_revocations (tenant, created_at);

CREATE FUNCTION public.announce_token_revocations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('roboscope_revocations', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER token_revocations_announced
    AFTER INSERT OR UPDATE OR DELETE ON public.token_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION public.announce_token_revocations();
