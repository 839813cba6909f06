-- Current-state tables, folded from the log by eventlog.project(). Unqualified on
-- purpose: verify builds scratch copies as temporary tables of the same names.
CREATE TABLE public.spaces (
    id              uuid PRIMARY KEY,
    key             text NOT NULL,
    name            text NOT NULL,
    description     text,
    model_glb_url   text,
    model_usdc_url  text,
    preview_url     text,
    scan_url        text,
    ml_model_url    text,
    meta            jsonb NOT NULL,
    active          boolean NOT NULL,
    version         bigint NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT spaces_key_key UNIQUE (key) DEFERRABLE INITIALLY IMMEDIATE
);

CREATE TABLE public.work_sessions (
    id              uuid PRIMARY KEY,
    space_id        uuid NOT NULL,
    session_type    text NOT NULL,
    status          text NOT NULL,
    started_at      timestamptz NOT NULL,
    completed_at    timestamptz,
    version         bigint NOT NULL,
    meta            jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX work_sessions_space_idx ON public.work_sessions (space_id, created_at);

CREATE TABLE public.markers (
    id              uuid PRIMARY KEY,
    work_session_id uuid NOT NULL,
    label           text,
    p1              jsonb NOT NULL,
    p2              jsonb NOT NULL,
    p3              jsonb NOT NULL,
    p4              jsonb NOT NULL,
    color           text,
    version         bigint NOT NULL,
    meta            jsonb NOT NULL,
    custom_props    jsonb NOT NULL,
    calibrated_data jsonb,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX markers_work_session_idx ON public.markers (work_session_id, created_at);

CREATE TABLE public.marker_details (
    marker_id              uuid PRIMARY KEY,
    center_location_long   double precision NOT NULL,
    center_location_cross  double precision NOT NULL,
    left_distance          double precision NOT NULL,
    right_distance         double precision NOT NULL,
    far_distance           double precision NOT NULL,
    near_distance          double precision NOT NULL,
    long_size              double precision NOT NULL,
    cross_size             double precision NOT NULL,
    custom_props           jsonb NOT NULL,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    -- The details stream's version, a concurrency token the API does not show.
    version                bigint NOT NULL
);

-- Enforced work session locks, folded from the lock stream's events so that writes can
-- be checked inside their own transaction (Redis stays the authority for who gets a
-- lock; this table is what Postgres knows of the current acquisition).
CREATE TABLE public.session_locks (
    work_session_id  uuid PRIMARY KEY,
    holder           text NOT NULL,
    -- SHA-256 of the lock token, hex: the log never holds a usable token.
    token_sha256     text NOT NULL,
    -- The acquisition's version in the lock stream: grows with every acquisition.
    fencing_token    bigint NOT NULL,
    enforce          boolean NOT NULL,
    expires_at       timestamptz NOT NULL
);
