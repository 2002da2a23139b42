/**
 * Plex account linking with a PIN (media-server-apis.md §6.2): create a short PIN on plex.tv, let
 * the user enter its code at `https://plex.tv/link`, poll the PIN with the same client identifier
 * until `authToken` appears. The plex.tv base URL is a parameter so tests can use a fake.
 * Tokens are returned to the caller only; they never appear in messages.
 */
import { num, str } from './common';
import { ProtocolError } from './errors';
import { HttpClient } from './http';
import { CLIENT_NAME, CLIENT_VERSION } from './options';

/** Default plex.tv root. */
export const PLEX_TV_URL = 'https://plex.tv';

export interface PlexPinOptions {
  /** Product name shown to the user on plex.tv (`X-Plex-Product`). Default `polyphony`. */
  product?: string;
  /** Per-request timeout in ms. Default 10 000 (reference connect timeout). */
  timeoutMs?: number;
  /** Extra attempts for transient failures. Default 2. */
  retries?: number;
}

/** A freshly created PIN. */
export interface PlexPin {
  /** plex.tv PIN id (stringified integer), used for polling. */
  id: string;
  /** The short code the user types at {@link PlexPin.linkUrl}. */
  code: string;
  /** Where the user enters the code (`<baseUrl>/link`, i.e. https://plex.tv/link). */
  linkUrl: string;
  /** ISO-8601 expiry time, when plex.tv reports it. */
  expiresAt?: string;
  /** Seconds until expiry (plex.tv default 900), when reported. */
  expiresIn?: number;
}

/** Polling result. */
export interface PlexPinStatus {
  /** The account token once the user has linked; absent before. */
  token?: string;
  expiresAt?: string;
  /** True when `expiresAt` has passed without a token: stop polling and create a new PIN. */
  expired?: boolean;
}

interface PinBody {
  id?: number | string;
  code?: string;
  authToken?: string | null;
  expiresAt?: string;
  expiresIn?: number;
}

function pinClient(clientId: string, baseUrl: string, opts: PlexPinOptions): HttpClient {
  return new HttpClient({
    baseUrl,
    label: 'plex.tv',
    timeoutMs: opts.timeoutMs ?? 10_000,
    retries: opts.retries ?? 2,
    headers: {
      Accept: 'application/json',
      'X-Plex-Product': opts.product ?? CLIENT_NAME,
      'X-Plex-Version': CLIENT_VERSION,
      'X-Plex-Client-Identifier': clientId,
      'X-Plex-Device-Name': opts.product ?? CLIENT_NAME,
    },
  });
}

/**
 * Creates a short (non-strong) PIN: `POST {baseUrl}/api/v2/pins` with form `strong=false` and the
 * identification headers. Keep `clientId` stable and reuse it for {@link checkPin}.
 * @throws UnreachableError / ProtocolError from the HTTP layer; ProtocolError when the reply has
 *   no id or code.
 */
export async function createPin(clientId: string, baseUrl: string = PLEX_TV_URL, opts: PlexPinOptions = {}): Promise<PlexPin> {
  const http = pinClient(clientId, baseUrl, opts);
  const body = await http.requestJson<PinBody>('POST', '/api/v2/pins', {
    body: new URLSearchParams({ strong: 'false' }),
    // An extra unused PIN is harmless, so a retry cannot hurt.
    idempotent: true,
  });
  const id = str(body?.id);
  const code = str(body?.code);
  if (!id || !code) throw new ProtocolError('plex.tv: PIN creation returned no id or code');
  const pin: PlexPin = { id, code, linkUrl: `${http.baseUrl}/link` };
  if (str(body?.expiresAt)) pin.expiresAt = body?.expiresAt;
  const expiresIn = num(body?.expiresIn);
  if (expiresIn !== undefined) pin.expiresIn = expiresIn;
  return pin;
}

/**
 * Polls a PIN: `GET {baseUrl}/api/v2/pins/{id}` with the same client identifier. Returns
 * `{token}` once `authToken` is set, `{expired:true}` after `expiresAt`, `{}` while pending.
 * Poll about every 1-1.5 s (python-plexapi / AudioMuse-AI).
 * @throws NotFoundError when plex.tv no longer knows the PIN.
 */
export async function checkPin(id: string | number, clientId: string, baseUrl: string = PLEX_TV_URL, opts: PlexPinOptions = {}): Promise<PlexPinStatus> {
  const http = pinClient(clientId, baseUrl, opts);
  const body = await http.getJson<PinBody>(`/api/v2/pins/${encodeURIComponent(String(id))}`);
  if (!body || typeof body !== 'object') throw new ProtocolError('plex.tv: PIN status returned no body');
  const status: PlexPinStatus = {};
  const token = str(body.authToken ?? undefined);
  if (token) status.token = token;
  if (str(body.expiresAt)) {
    status.expiresAt = body.expiresAt;
    const at = Date.parse(body.expiresAt as string);
    if (!token && !Number.isNaN(at) && at <= Date.now()) status.expired = true;
  }
  return status;
}
