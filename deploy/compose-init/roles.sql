-- Run once by the postgres image on an empty volume (/docker-entrypoint-initdb.d).
-- Nothing of the service connects as the image's superuser: `roboscope_owner` owns the
-- database and migrates it; `roboscope_app` serves, and may append to the event log but
-- never edit it (docs/security.md#database-roles). Change the passwords for anything
-- but a laptop.
CREATE ROLE roboscope_owner LOGIN PASSWORD 'roboscope-owner' NOSUPERUSER NOCREATEDB NOCREATEROLE;
CREATE ROLE roboscope_app LOGIN PASSWORD 'roboscope-app' NOSUPERUSER NOCREATEDB NOCREATEROLE;
CREATE DATABASE roboscope OWNER roboscope_owner;
REVOKE ALL ON DATABASE roboscope FROM PUBLIC;
