-- Distributed mode: one schema per service. Each service's migrations create its tables; the
-- schemas are created here so per-service roles can be limited to their own schema if desired.
CREATE SCHEMA IF NOT EXISTS auth;
CREATE SCHEMA IF NOT EXISTS registry;
CREATE SCHEMA IF NOT EXISTS catalogue;
CREATE SCHEMA IF NOT EXISTS analysis;
CREATE SCHEMA IF NOT EXISTS "index";
CREATE SCHEMA IF NOT EXISTS playlist;
