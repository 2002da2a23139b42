import { DEFAULT_BODY_LIMIT, RouteMatcher, routeTable, type RouteDef, type RouteMatch } from '@polyphony/contracts';
import type { ServiceName } from '../config';

/**
 * The gateway's view of the contracts route table (no second table here): every route except the
 * `internal` ones is reachable through the gateway. The request pipeline (`@polyphony/platform`
 * `RequestPipeline`) serves exactly these routes; the functions below read the table for the pipeline's
 * configuration and for tests (owner, access, first-run window, body limit of a request).
 */
let matcher: RouteMatcher | undefined;

/** The routes the gateway serves or forwards: the whole table minus `internal` routes. */
export function gatewayRoutes(): RouteDef[] {
  return routeTable().filter((d) => d.access !== 'internal');
}

/** Looks up a request among `gatewayRoutes()` (HEAD is answered by GET). The returned match is shared: callers must not change it. */
export function matchRoute(method: string, path: string): RouteMatch {
  matcher ??= new RouteMatcher(gatewayRoutes());
  return matcher.match(method, path);
}

function found(method: string, path: string): RouteDef | undefined {
  const m = matchRoute(method, path);
  return m.kind === 'found' ? m.def : undefined;
}

/** Paths whose unknown routes the gateway answers 404/405 (the API); anything else is the web UI's static files. */
export function isApiPath(path: string): boolean {
  return /^\/(api|external)(\/|$)|^\/chat\/api(\/|$)/.test(path);
}

/** The service a request is forwarded to; undefined for the gateway's own routes and unknown routes. */
export function serviceFor(method: string, path: string): ServiceName | undefined {
  const def = found(method, path);
  return def && def.service !== 'gateway' ? def.service : undefined;
}

/** Whether the route's access is `admin` in the table. */
export function isAdminOnly(method: string, path: string): boolean {
  return found(method, path)?.access === 'admin';
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
