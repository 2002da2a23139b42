import type { CallerIdentity } from '../internal-auth';

/** A caller as the gateway or a service signs it (the signing time is added by `signIdentity`). */
export type Caller = Omit<CallerIdentity, 'iat'>;

/** One caller of each kind the access rules tell apart (access.test.ts, routes.test.ts, pipeline.test.ts). */
export const CALLERS: Record<string, Caller | undefined> = {
  'no identity': undefined,
  'cookie user': { sub: 'u1', username: 'ann', role: 'user', via: 'cookie' },
  'cookie admin': { sub: 'u2', username: 'bob', role: 'admin', via: 'cookie' },
  'bearer token': { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer' },
  'anonymous (authentication off)': { sub: 'anonymous', username: 'anonymous', role: 'admin', via: 'anonymous' },
  'setup (first-run window)': { sub: 'setup', username: 'setup', role: 'admin', via: 'setup' },
  'service (internal admin)': { sub: 'service:playlist', username: 'playlist', role: 'admin', via: 'internal' },
  'internal user role': { sub: 'service:x', username: 'x', role: 'user', via: 'internal' },
};

/**
 * The access decision per caller kind, one status per access kind in `ACCESSES` order (200 = allowed; 401 / 403 =
 * the status of the error `decideAccess` returns): the table access.test.ts checks and routes.test.ts runs over HTTP.
 */
export const ACCESSES = ['public', 'user', 'admin', 'bearer', 'internal'] as const;
export const ACCESS_DECISIONS: Record<string, number[]> = {
  'no identity': [200, 401, 401, 401, 401],
  'cookie user': [200, 200, 403, 403, 403],
  'cookie admin': [200, 200, 200, 403, 403],
  'bearer token': [200, 200, 200, 200, 403],
  'anonymous (authentication off)': [200, 200, 200, 200, 403],
  'setup (first-run window)': [200, 200, 200, 403, 403],
  'service (internal admin)': [200, 200, 200, 403, 200],
  'internal user role': [200, 200, 403, 403, 403],
};
