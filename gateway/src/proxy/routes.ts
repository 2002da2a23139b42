import { DEFAULT_BODY_LIMIT, RouteMatcher, routeTable, type RouteDef, type RouteMatch } from '@polyphony/contracts';
import type { ServiceName } from '../config';

/**
 * The gateway's routing and authorization, read from the contracts route table (no second table
 * here): every route except the `internal` ones is reachable through the gateway; a path not in the
 * table is 404 and a known path with another method is 405 (default deny). Owner, access
 * (public/user/admin/bearer), the first-run window and the body limit come from each route's
 * definition.
 */
let matcher: RouteMatcher | undefined;

/** The routes the gateway serves or forwards: the whole table minus `internal` routes. */
export function gatewayRoutes(): RouteDef[] {
  return routeTable().filter((d) => d.access !== 'internal');
}

/** Recent look-ups by `METHOD path` (the table is static; at most MATCH_CACHE_SIZE, then emptied). */
const matches = new Map<string, RouteMatch>();
const MATCH_CACHE_SIZE = 2048;

/**
 * Looks up a request in the table (HEAD is answered by GET). A request is looked up 2-4 times (auth,
 * access, body limit, dispatch), each a scan of ~150 route patterns: recent answers are kept (issue 19).
 * The returned match is shared: callers must not change it.
 */
export function matchRoute(method: string, path: string): RouteMatch {
  const key = `${method} ${path}`;
  let m = matches.get(key);
  if (!m) {
    matcher ??= new RouteMatcher(gatewayRoutes());
    m = matcher.match(method, path);
    if (matches.size >= MATCH_CACHE_SIZE) matches.clear();
    matches.set(key, m);
  }
  return m;
}

function found(method: string, path: string): RouteDef | undefined {
  const m = matchRoute(method, path);
  return m.kind === 'found' ? m.def : undefined;
}

/** Paths the gateway's dispatcher answers for (the API); anything else is the web UI's static files. */
export function isApiPath(path: string): boolean {
  return /^\/(api|external)(\/|$)|^\/chat\/api(\/|$)/.test(path);
}

/** The service a request is forwarded to; undefined for the gateway's own routes and unknown routes. */
export function serviceFor(method: string, path: string): ServiceName | undefined {
  const def = found(method, path);
  return def && def.service !== 'gateway' ? def.service : undefined;
}

/** Whether the route needs the admin role (403 otherwise). The owning service checks again where it must. */
export function isAdminOnly(method: string, path: string): boolean {
  return found(method, path)?.access === 'admin';
}

/** Whether the route takes only the API token (`bearer` access). */
export function isBearerOnly(method: string, path: string): boolean {
  return found(method, path)?.access === 'bearer';
}

/** Whether the route is reachable without authentication while no admin exists (first-run Setup). */
export function isSetupPath(method: string, path: string): boolean {
  return found(method, path)?.firstRun === true;
}

/** Services whose requests carry a resolved `server` (the registry resolves its own ids). */
export function needsServerResolution(service: ServiceName): boolean {
  return service !== 'registry';
}

/** The JSON body limit of a route in bytes (its `bodyLimit`, else DEFAULT_BODY_LIMIT). */
export function bodyLimitFor(method: string, path: string): number {
  return found(method, path)?.bodyLimit ?? DEFAULT_BODY_LIMIT;
}

/** The streamed-upload media types of a route (none for most). */
export function uploadTypesFor(method: string, path: string): readonly string[] {
  return found(method, path)?.uploadTypes ?? [];
}
