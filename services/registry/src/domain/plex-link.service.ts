import { checkPin, createPin } from '@polyphony/media-servers';

/**
 * Plex PIN account linking, proxied server-side (plex.tv sends no CORS headers): create a PIN,
 * return its code and the link URL, then poll until plex.tv attaches the token. The plex.tv base
 * URL comes from the registry settings (PLEX_TV_URL) so tests can point it at a fake.
 */
export class PlexLinkService {
  constructor(private readonly baseUrl: () => Promise<string>) {}

  async create(clientId: string): Promise<{ id: string; code: string; link_url: string }> {
    const pin = await createPin(clientId, await this.baseUrl());
    return { id: String(pin.id), code: pin.code, link_url: pin.linkUrl };
  }

  async poll(id: string, clientId: string): Promise<{ token: string | null }> {
    const r = await checkPin(id, clientId, await this.baseUrl());
    return { token: r.token ?? null };
  }
}
