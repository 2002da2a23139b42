/**
 * Authentication and accounts of the fake Navidrome (subsonic.ts), per media-server-apis.md §4.1:
 * - `u` plus `t = md5(password + s)` with `s`, or `p` (clear or `enc:<hex>`); missing `u`/`v`/`c` or missing
 *   credentials → code 10, wrong → code 40;
 * - with an API key configured (OpenSubsonic `apiKeyAuthentication`): `apiKey` without `u` authenticates as the
 *   main user, `u` together with `apiKey` → code 43, an unknown key → code 44; without one, `apiKey` is ignored;
 * - other users (`accounts`, Navidrome 0.58 multi-library) see only the catalogue libraries they were given, and a
 *   music folder outside them is "not found or not accessible" (code 70), as an unknown one.
 */
import { createHash } from 'node:crypto';
import type { FakeCatalogue } from './catalogue';
import { SUBSONIC_ERRORS, SubsonicError } from './subsonic-protocol';

/** A non-admin user and the catalogue libraries (by catalogue library id) it was given. */
export interface SubsonicAccount {
  user: string;
  password: string;
  libraries: string[];
}

/** Checks the credentials of a request; see the module doc. */
export class SubsonicAuth {
  constructor(
    private readonly user: string,
    private readonly password: string,
    private readonly apiKey: string | undefined,
    private readonly accounts: ReadonlyArray<SubsonicAccount>,
  ) {}

  /**
   * Authenticates the request's parameters. Returns the libraries its user may see (undefined = all: the main
   * user or the API key); throws a {@link SubsonicError} (code 10, 40, 43 or 44) otherwise.
   */
  authenticate(params: URLSearchParams): string[] | undefined {
    const key = params.get('apiKey');
    if (this.apiKey !== undefined && key !== null) {
      if (params.get('u') !== null) throw new SubsonicError(SUBSONIC_ERRORS.conflictingAuth, 'Multiple conflicting authentication mechanisms provided');
      if (!params.get('v') || !params.get('c')) throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
      if (key !== this.apiKey) throw new SubsonicError(SUBSONIC_ERRORS.invalidApiKey, 'Invalid API key');
      return undefined;
    }
    const u = params.get('u');
    if (!u || !params.get('v') || !params.get('c')) throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
    const p = params.get('p');
    const t = params.get('t');
    const s = params.get('s');
    const other = u === this.user ? undefined : this.accounts.find((a) => a.user === u);
    const password = other ? other.password : this.password;
    let ok: boolean;
    if (p !== null) {
      let clear = p;
      if (p.startsWith('enc:')) clear = Buffer.from(p.slice(4), 'hex').toString('utf8');
      ok = clear === password;
    } else if (t !== null && s !== null) {
      ok = createHash('md5').update(password + s).digest('hex') === t.toLowerCase();
    } else {
      throw new SubsonicError(SUBSONIC_ERRORS.missingParameter, 'Missing required parameter');
    }
    if (!ok || (u !== this.user && !other)) throw new SubsonicError(SUBSONIC_ERRORS.wrongCredentials, 'Wrong username or password');
    return other ? [...other.libraries] : undefined;
  }
}

/**
 * The catalogue library ids of the request's `musicFolderId` values (repeatable; `musicFolder.id` is the library's
 * 1-based position), or, without any, the libraries `visible` to its user (undefined = all). A folder that does not
 * exist or that the user was not given → code 70.
 */
export function folderFilter(catalogue: FakeCatalogue, visible: string[] | undefined, params: URLSearchParams): string[] | undefined {
  const raw = params.getAll('musicFolderId').filter((v) => v !== '');
  if (!raw.length) return visible;
  return raw.map((v) => {
    const lib = catalogue.libraries[Number(v) - 1];
    if (!lib || !/^\d+$/.test(v) || (visible && !visible.includes(lib.id))) {
      throw new SubsonicError(SUBSONIC_ERRORS.notFound, `Library ${v} not found or not accessible`);
    }
    return lib.id;
  });
}

/** `getMusicFolders`: the catalogue's libraries as `{id, name}` folders, only those `visible` to the user (undefined = all). */
export function musicFolders(catalogue: FakeCatalogue, visible: string[] | undefined): Record<string, unknown> {
  return { musicFolders: { musicFolder: catalogue.libraries.map((l, j) => ({ id: j + 1, name: l.name, lib: l.id })).filter((f) => !visible || visible.includes(f.lib)).map(({ id, name }) => ({ id, name })) } };
}
