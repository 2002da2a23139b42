import type { RouteDef } from './openapi';

/**
 * Path matching over the route table, without Express (the gateway and the browser use it).
 * A path pattern's `:name` segment matches one non-empty segment without `/`; a trailing slash is
 * ignored (Express's non-strict routing does the same in the services).
 */
export interface CompiledRoute {
  def: RouteDef;
  regex: RegExp;
  names: string[];
  /** Literal segments first: `/api/servers/test` wins over `/api/servers/:id`. */
  specificity: number[];
}

export function compileRoute(def: RouteDef): CompiledRoute {
  const names: string[] = [];
  const segments = def.path.split('/').filter((s) => s !== '');
  const source = segments
    .map((seg) => {
      if (seg.startsWith(':')) {
        names.push(seg.slice(1));
        return '/([^/]+)';
      }
      return '/' + seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { def, regex: new RegExp(`^${source}/?$`), names, specificity: segments.map((s) => (s.startsWith(':') ? 1 : 0)) };
}

/** Orders routes so that a literal segment comes before a parameter at the same depth (then by path). */
export function bySpecificity(a: CompiledRoute, b: CompiledRoute): number {
  const n = Math.max(a.specificity.length, b.specificity.length);
  for (let i = 0; i < n; i++) {
    const d = (a.specificity[i] ?? -1) - (b.specificity[i] ?? -1);
    if (d !== 0) return d;
  }
  return a.def.path.localeCompare(b.def.path);
}

export type RouteMatch =
  | { kind: 'found'; def: RouteDef; params: Record<string, string> }
  /** The path is known but not with this method: answer 405 with these methods in `Allow`. */
  | { kind: 'method'; allow: string[] }
  | { kind: 'none' };

/** A matcher over a fixed list of routes (e.g. every non-internal route, for the gateway). */
export class RouteMatcher {
  private readonly compiled: CompiledRoute[];

  constructor(routes: readonly RouteDef[]) {
    this.compiled = routes.map(compileRoute).sort(bySpecificity);
  }

  /** Finds the route of `method` (HEAD is served by GET) and `path` (no query string). */
  match(method: string, path: string): RouteMatch {
    const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
    const allow = new Set<string>();
    for (const c of this.compiled) {
      const hit = c.regex.exec(path);
      if (!hit) continue;
      const verb = c.def.method.toUpperCase();
      if (verb === m) {
        const params: Record<string, string> = {};
        c.names.forEach((name, i) => {
          params[name] = safeDecode(hit[i + 1]!);
        });
        return { kind: 'found', def: c.def, params };
      }
      allow.add(verb);
      if (verb === 'GET') allow.add('HEAD');
    }
    return allow.size > 0 ? { kind: 'method', allow: [...allow].sort() } : { kind: 'none' };
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
