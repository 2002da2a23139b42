/**
 * Typed errors raised by every media-server client. Callers branch on `kind` (or `instanceof`),
 * never on message text. Messages never carry secrets: URLs are redacted before they are quoted
 * (see `redactUrl` in http.ts).
 */

/** Discriminator of {@link MediaServerError}. */
export type MediaServerErrorKind =
  | 'bad_credentials'
  | 'permission_denied'
  | 'unreachable'
  | 'protocol'
  | 'not_found';

/** Extra facts attached to an error; all optional. */
export interface MediaServerErrorDetails {
  /** HTTP status of the failing response, when there was one. */
  status?: number;
  /** Provider-level error code (e.g. the Subsonic `error.code`). */
  code?: number;
  /** The underlying error (network error, abort reason, JSON parse error). */
  cause?: unknown;
}

/** Base class of every error this package throws on purpose. */
export abstract class MediaServerError extends Error {
  abstract readonly kind: MediaServerErrorKind;
  readonly status?: number;
  readonly code?: number;

  constructor(message: string, details: MediaServerErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    if (details.status !== undefined) this.status = details.status;
    if (details.code !== undefined) this.code = details.code;
  }
}

/**
 * The server refused the credentials: HTTP 401 (Jellyfin, Emby, Plex, Lyrion Basic auth) or a
 * Subsonic `status:"failed"` envelope with an auth code 40-44.
 */
export class BadCredentialsError extends MediaServerError {
  readonly kind = 'bad_credentials' as const;
}

/**
 * The credentials were accepted but the user may not do this (HTTP 403, Subsonic code 50,
 * e.g. downloads disabled or a non-admin asking for `/Library/VirtualFolders`).
 */
export class PermissionDeniedError extends MediaServerError {
  readonly kind = 'permission_denied' as const;
}

/**
 * The server could not be reached or answered: connection refused/reset, DNS failure, timeout,
 * or HTTP 5xx / 429 still failing after the configured retries.
 */
export class UnreachableError extends MediaServerError {
  readonly kind = 'unreachable' as const;
}

/**
 * The server answered, but not in the shape the API documents: invalid JSON, a missing envelope,
 * an unexpected 4xx, or a Subsonic failed envelope with a non-auth code.
 */
export class ProtocolError extends MediaServerError {
  readonly kind = 'protocol' as const;
}

/** The addressed item (track, playlist, PIN) does not exist: HTTP 404 or Subsonic code 70. */
export class NotFoundError extends MediaServerError {
  readonly kind = 'not_found' as const;
}

/** True for any error raised on purpose by this package. */
export function isMediaServerError(err: unknown): err is MediaServerError {
  return err instanceof MediaServerError;
}
