/**
 * Jellyfin / Emby username + password sign-in (media-server-apis.md §2.2 and §3):
 * `POST /Users/AuthenticateByName` with `{"Username","Pw"}` and the client identification header
 * (Jellyfin: `Authorization: MediaBrowser Client=…, Device=…, DeviceId=…, Version=…`; Emby:
 * `X-Emby-Authorization: Emby UserId="", Client=…` under `/emby`). The answer's `AccessToken` and
 * `User.Id` are what the registry stores as `{token, user_id}`; the password is used for this one
 * request only and scrubbed from every message.
 */
import { str } from './common';
import { ProtocolError } from './errors';
import { CLIENT_NAME, CLIENT_VERSION, providerHttp, type ClientOptions } from './options';

/** What a successful sign-in yields. */
export interface SignInResult {
  /** The user's access token (a secret). */
  token: string;
  /** The user's id (Jellyfin: 32 hex; Emby: usually 32 hex). */
  userId: string;
  /** The server's name, when it says. */
  serverName?: string;
}

/** Identification header values (URL-encoded, quoted) without a token. */
function identification(): string {
  const q = (v: string): string => `"${encodeURIComponent(v)}"`;
  return `Client=${q(CLIENT_NAME)}, Device=${q(CLIENT_NAME)}, DeviceId=${q(CLIENT_NAME)}, Version=${q(CLIENT_VERSION)}`;
}

/**
 * Signs in to a Jellyfin or Emby server with a username and password.
 * @param url server root (Emby: with or without `/emby`).
 * @throws BadCredentialsError (HTTP 401: wrong username or password), UnreachableError,
 *   ProtocolError (no `AccessToken` / `User.Id` in the answer, or a redirect to another origin).
 */
export async function signInWithPassword(
  type: 'jellyfin' | 'emby',
  url: string,
  username: string,
  password: string,
  opts: ClientOptions = {},
): Promise<SignInResult> {
  const root = url.trim().replace(/\/+$/, '');
  const base = type === 'emby' ? `${root.replace(/\/emby$/i, '')}/emby` : root;
  const headers: Record<string, string> =
    type === 'emby' ? { 'X-Emby-Authorization': `Emby UserId="", ${identification()}` } : { Authorization: `MediaBrowser ${identification()}` };
  const http = providerHttp(type, base, opts, { headers: { Accept: 'application/json', ...headers }, secrets: [password] });
  const body = await http.requestJson<{ AccessToken?: unknown; User?: { Id?: unknown; Name?: unknown }; ServerName?: unknown }>(
    'POST',
    '/Users/AuthenticateByName',
    { json: { Username: username, Pw: password } },
  );
  const token = str(body?.AccessToken);
  const userId = str(body?.User?.Id);
  if (!token || !userId) throw new ProtocolError(`${type}: AuthenticateByName returned no AccessToken or User.Id`);
  const out: SignInResult = { token, userId };
  const serverName = str(body?.ServerName);
  if (serverName) out.serverName = serverName;
  return out;
}
