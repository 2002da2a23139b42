import type { CallerIdentity } from '../internal-auth';

/** A caller as the gateway or a service signs it (the signing time is added by `signIdentity`). */
export type Caller = Omit<CallerIdentity, 'iat'>;

/** One caller of each kind the access rules tell apart (routes.test.ts, lean-http.test.ts). */
export const CALLERS: Record<string, Caller | undefined> = {
  'no identity': undefined,
  'cookie user': { sub: 'u1', username: 'ann', role: 'user', via: 'cookie' },
  'cookie admin': { sub: 'u2', username: 'bob', role: 'admin', via: 'cookie' },
  'bearer token': { sub: 'api-token', username: 'api-token', role: 'admin', via: 'bearer' },
  'service (internal admin)': { sub: 'service:playlist', username: 'playlist', role: 'admin', via: 'internal' },
  'internal user role': { sub: 'service:x', username: 'x', role: 'user', via: 'internal' },
};
