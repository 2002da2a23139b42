import { checkPin, createPin, isMediaServerError } from '@polyphony/media-servers';
import { NotFoundError, UpstreamUnavailableError } from '@polyphony/platform';

/**
 * Plex PIN account linking, proxied server-side (plex.tv sends no CORS headers): create a PIN,
 * return its code and the link URL, then poll until plex.tv attaches the token. The plex.tv base
 * URL comes from the registry settings (PLEX_TV_URL) so tests can point it at a fake.
 * plex.tv failures are the remote's fault: 404 for an unknown PIN, 502 otherwise (never a 500).
 */
export class PlexLinkService {
  constructor(private readonly baseUrl: () => Promise<string>) {}

  async create(clientId: string): Promise<{ id: string; code: string; link_url: string }> {
    const pin = await this.remote(async () => createPin(clientId, await this.baseUrl()));
    return { id: String(pin.id), code: pin.code, link_url: pin.linkUrl };
  }

  async poll(id: string, clientId: string): Promise<{ token: string | null }> {
    const r = await this.remote(async () => checkPin(id, clientId, await this.baseUrl()));
    return { token: r.token ?? null };
  }

  private async remote<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (!isMediaServerError(err)) throw err;
      if (err.kind === 'not_found') throw new NotFoundError('No such Plex PIN');
      throw new UpstreamUnavailableError(`plex.tv could not be used (${err.kind})`, 502, { cause: err });
    }
  }
}
