import type { RouteDef } from '@polyphony/contracts';
import { type AppError, ForbiddenError, UnauthorizedError } from './errors';
import type { CallerIdentity } from './internal-auth';

/**
 * The one access decision of the product: may `identity` call `route`? Read from the route's `access` in the
 * contracts table; used by the request pipeline (`RequestPipeline`) of the gateway and of every service, so
 * the gateway (from the caller it authenticated) and the owning service (from the signed identity header,
 * defence in depth) decide with the same rules:
 * - `public`: anyone, with or without an identity;
 * - no identity (any other access): 401 `unauthorized`;
 * - `user`: any identity;
 * - `admin`: the admin role (403 `forbidden` for a user);
 * - `bearer`: a caller authenticated with the API token (`via: 'bearer'`) or authentication off
 *   (`via: 'anonymous'`); a cookie session is refused (403);
 * - `internal`: a service's own signed identity (`via: 'internal'` with the admin role `ServiceClient` signs);
 *   anything else, a user's identity forwarded by the gateway included, is refused (403). The gateway never
 *   routes `internal` routes at all.
 * Returns undefined when the call is allowed, else the error to answer (nothing is thrown).
 */
export function decideAccess(route: Pick<RouteDef, 'access'>, identity: CallerIdentity | undefined): AppError | undefined {
  const access = route.access;
  if (access === 'public') return undefined;
  if (!identity) return new UnauthorizedError();
  switch (access) {
    case 'user':
      return undefined;
    case 'admin':
      return identity.role === 'admin' ? undefined : new ForbiddenError('Admin role required');
    case 'bearer':
      return identity.via === 'bearer' || identity.via === 'anonymous' ? undefined : new ForbiddenError('This route takes the API token (Authorization: Bearer)');
    case 'internal':
      return identity.via === 'internal' && identity.role === 'admin' ? undefined : new ForbiddenError('Internal route: service callers only');
    default:
      // An access kind this function does not know is refused (default deny).
      return new ForbiddenError('Not allowed');
  }
}
