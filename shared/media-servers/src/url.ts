/**
 * URLs of media-server requests: building them, redacting their secrets for messages and logs, and whether
 * credentials may follow a redirect (the rules of http.ts: tokens never reach another origin).
 */

/** A query value; arrays become repeated parameters (`songId=a&songId=b`), nullish values are skipped. */
export type QueryValue = string | number | boolean | null | undefined | ReadonlyArray<string | number>;
export type Query = Record<string, QueryValue>;

/** Query parameter names whose values are secrets (compared case-insensitively). */
const SECRET_PARAMS = new Set([
  'token', 'password', 't', 's', 'p', 'apikey', 'api_key', 'x-plex-token', 'accesstoken', 'auth', 'jwt',
]);

/**
 * Returns the URL as text with secret query values replaced by `***` and any `user:password@`
 * userinfo removed. Never throws; unparsable input is returned with a generic redaction.
 */
export function redactUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return String(url).replace(/([?&](?:token|password|t|s|p|apikey|api_key|x-plex-token)=)[^&#]*/gi, '$1***');
  }
  if (u.username || u.password) {
    u.username = '';
    u.password = '';
  }
  const parts: string[] = [];
  for (const [k, v] of u.searchParams) {
    parts.push(`${encodeURIComponent(k)}=${SECRET_PARAMS.has(k.toLowerCase()) ? '***' : encodeURIComponent(v)}`);
  }
  return `${u.origin}${u.pathname}${parts.length ? `?${parts.join('&')}` : ''}`;
}

/** Builds `base + path` (base may carry a path prefix) and appends the query. */
export function buildUrl(baseUrl: string, path: string, query?: Query): URL {
  const base = baseUrl.replace(/\/+$/, '');
  const url = new URL(base + (path.startsWith('/') ? path : `/${path}`));
  if (query) {
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) {
        for (const v of value as ReadonlyArray<string | number>) url.searchParams.append(key, String(v));
      } else {
        url.searchParams.append(key, String(value));
      }
    }
  }
  return url;
}

/**
 * Whether credentials for `from` may be sent to `to`: the same origin, or `https:` on the same
 * host name (an http → https upgrade behind a reverse proxy). Anything else is another origin.
 */
export function mayCarryCredentials(from: URL, to: URL): boolean {
  if (to.origin === from.origin) return true;
  return to.protocol === 'https:' && to.hostname === from.hostname;
}

/**
 * Encodes credentials for HTTP Basic auth (RFC 7617, UTF-8).
 * @returns the full header value, `Basic <base64(user:password)>`.
 */
export function basicAuthHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}
