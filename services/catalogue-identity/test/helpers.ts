/**
 * Test helpers of the catalogue service: a service on a fresh PostgreSQL database called through its
 * HTTP API with signed internal headers, and synthetic embeddings with controlled similarity.
 */
import request from 'supertest';
import { Client } from 'pg';
import type { ResolveIdentityRequest } from '@polyphony/contracts';
import { InMemoryBus, signIdentity, type Bus, type Role } from '@polyphony/platform';
import { createTestDatabase, type TestDatabase } from '@polyphony/testkit';
import { buildCatalogue, loadCatalogueConfig, type CatalogueDeps, type CatalogueService } from '../src';
import { mulberry32 } from '@polyphony/vectors';

export const INTERNAL_SECRET = 'catalogue-test-secret-0123456789';

export interface StartedCatalogue {
  svc: CatalogueService;
  db: TestDatabase;
  bus: Bus;
  /** Signed internal headers (admin unless asked otherwise). */
  headers(role?: Role): Record<string, string>;
  post(path: string, body: unknown, role?: Role): request.Test;
  get(path: string, role?: Role): request.Test;
  put(path: string, body: unknown, role?: Role): request.Test;
  /** Runs SQL on the test database (own connection). */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  stop(): Promise<void>;
}

/**
 * Builds and starts the catalogue on `db` (a fresh database when absent) with migrations, an in-process
 * bus (shared when given) and mapping.changed published without debounce. `deps` adds peers, media
 * clients or hooks (the batch-task tests).
 */
export async function startCatalogue(env: Record<string, string> = {}, db?: TestDatabase, bus?: Bus, deps: Omit<CatalogueDeps, 'bus' | 'migrateOnStart'> = {}): Promise<StartedCatalogue> {
  const database = db ?? (await createTestDatabase('catalogue_test'));
  const theBus = bus ?? new InMemoryBus();
  const config = loadCatalogueConfig({
    DATABASE_URL: database.url,
    INTERNAL_SECRET,
    MAPPING_CHANGED_DEBOUNCE_MS: '0',
    DB_POOL_SIZE: '10',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    ...env,
  });
  const svc = buildCatalogue(config, { ...deps, migrateOnStart: true, bus: theBus });
  await svc.start();
  const headers = (role: Role = 'admin') => signIdentity({ sub: 'service:test', username: 'test', role, via: 'internal' }, INTERNAL_SECRET);
  return {
    svc,
    db: database,
    bus: theBus,
    headers,
    post: (path, body, role) => request(svc.http).post(path).set(headers(role)).send(body as object),
    get: (path, role) => request(svc.http).get(path).set(headers(role)),
    put: (path, body, role) => request(svc.http).put(path).set(headers(role)).send(body as object),
    async sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
      const c = new Client({ connectionString: database.url });
      await c.connect();
      try {
        return (await c.query(text, params)).rows as T[];
      } finally {
        await c.end();
      }
    },
    stop: () => svc.stop(),
  };
}

/** mulberry32 (the one in @polyphony/vectors): deterministic floats in [0, 1) from a 32-bit seed. */
export const prng = mulberry32;

/** Standard normal samples from a PRNG (Box-Muller). */
export function gaussian(rand: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

/** A random 200-d "song" embedding (independent N(0,1) values): different seeds are different songs. */
export function songEmbedding(seed: number): number[] {
  const g = gaussian(prng(seed));
  return Array.from({ length: 200 }, () => g());
}

/**
 * A "copy" of an embedding: the same values plus N(0, noise^2) per dimension. With noise 0.02 the cosine
 * distance to the original is about noise^2 / 2 = 0.0002 and the signature differs in about 1-2 bits.
 */
export function copyOf(embedding: readonly number[], seed: number, noise = 0.02): number[] {
  const g = gaussian(prng(seed));
  return embedding.map((v) => v + noise * g());
}

/**
 * Two embeddings with the SAME signature but far apart in cosine distance (different audio whose
 * signatures collide): one sign pattern (100 dims +, 100 dims -), independent exponential magnitudes.
 * Cosine similarity is about E[u]^2 / E[u^2] = 0.5 for exponential magnitudes.
 */
export function collidingEmbeddings(seed: number, count: number): number[][] {
  const rand = prng(seed);
  const signs: number[] = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? 1 : -1));
  // Shuffle the sign pattern so it is not trivially periodic.
  for (let i = 199; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [signs[i], signs[j]] = [signs[j] as number, signs[i] as number];
  }
  return Array.from({ length: count }, () => signs.map((s) => s * (0.3 + -Math.log(1 - rand()))));
}

/** A resolve request with sensible metadata. */
export function resolveRequest(serverId: string, providerId: string, embedding: readonly number[], extra: Partial<ResolveIdentityRequest> = {}): ResolveIdentityRequest {
  return {
    serverId,
    providerId,
    embedding: [...embedding],
    embedderVersion: 'test-v1',
    durationSeconds: 200,
    metadata: { title: `Title ${providerId}`, artist: 'Artist', album: 'Album', filePath: `/music/${serverId}/${providerId}/track.flac` },
    descriptors: {},
    ...extra,
  };
}
