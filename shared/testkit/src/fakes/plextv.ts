/**
 * Fake plex.tv account service for the PIN linking flow, per media-server-apis.md §6.2.
 *
 * - `POST /api/v2/pins` (query or form `strong=true|false`) needs `X-Plex-Product` and
 *   `X-Plex-Client-Identifier` (400 without). Answers **201** with `authToken: null`; strong PINs
 *   have a 25-character code, others a 4-character plex.tv/link code; `expiresIn` 900 s.
 * - `GET /api/v2/pins/{id}` must carry the same `X-Plex-Client-Identifier` (404 otherwise, and for
 *   unknown or expired PINs: the real expired-pin status is unverified). `authToken` stays null
 *   until the test calls {@link FakePlexTv.approve}.
 * - `GET /api/v2/user` with `X-Plex-Token` → 200 account JSON, 401 for an unknown token.
 * - `GET /api/v2/resources` → the configured servers (`provides:"server"`, `accessToken`, `connections[]`).
 * JSON when `Accept: application/json`, otherwise a minimal XML rendering.
 */
import { randomBytes } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import { FakeCore, newApp, recordBody, toXml, type StartedFake } from './common';

/** A server advertised by `GET /api/v2/resources`. */
export interface FakePlexTvServer {
  name: string;
  clientIdentifier: string;
  accessToken: string;
  /** Base URLs, e.g. a running FakePlex's url. */
  uris: string[];
}

/** Options of {@link createFakePlexTv}. */
export interface FakePlexTvOptions {
  /** Token handed out on approval when `approve` gets none. Default random 20 chars. */
  accountToken?: string;
  /** PIN lifetime in seconds (default 900). */
  expiresInSeconds?: number;
  servers?: FakePlexTvServer[];
}

/** The state of one PIN. */
export interface FakePin {
  id: number;
  code: string;
  product: string;
  clientIdentifier: string;
  strong: boolean;
  createdAt: number;
  expiresAt: number;
  authToken: string | null;
}

const CODE_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** A fake plex.tv; see the module doc. */
export class FakePlexTv {
  readonly core = new FakeCore();
  readonly app: Express;
  readonly accountToken: string;
  servers: FakePlexTvServer[];
  private readonly expiresIn: number;
  private readonly pinMap = new Map<number, FakePin>();
  private readonly tokens = new Set<string>();
  private nextId = 308667304;

  constructor(opts: FakePlexTvOptions = {}) {
    this.accountToken = opts.accountToken ?? randomBytes(15).toString('base64url').slice(0, 20);
    this.expiresIn = opts.expiresInSeconds ?? 900;
    this.servers = opts.servers ?? [];
    this.app = this.build();
  }

  /** Links PIN `pinId`: its next poll returns `authToken` (default {@link accountToken}). */
  approve(pinId: number, token: string = this.accountToken): void {
    const pin = this.pinMap.get(pinId);
    if (!pin) throw new Error(`unknown pin ${pinId}`);
    pin.authToken = token;
    this.tokens.add(token);
  }
  /** Makes PIN `pinId` expire now. */
  expire(pinId: number): void {
    const pin = this.pinMap.get(pinId);
    if (pin) pin.expiresAt = Date.now() - 1;
  }
  /** All PINs created so far. */
  pins(): FakePin[] {
    return [...this.pinMap.values()].map((p) => ({ ...p }));
  }
  get requests() {
    return this.core.requests;
  }
  start(): Promise<StartedFake> {
    return this.core.listen(this.app);
  }

  private body(p: FakePin): Record<string, unknown> {
    return {
      id: p.id,
      code: p.code,
      product: p.product,
      trusted: false,
      qr: `https://plex.tv/api/v2/pins/qr/${p.code}`,
      clientIdentifier: p.clientIdentifier,
      location: { code: 'XX', european_union_member: false, continent_code: 'XX', country: 'Nowhere', city: 'Localhost', time_zone: 'UTC', postal_code: '00000', in_privacy_restricted_country: false, subdivisions: '' },
      expiresIn: Math.max(0, Math.round((p.expiresAt - Date.now()) / 1000)),
      createdAt: new Date(p.createdAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      expiresAt: new Date(p.expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      authToken: p.authToken,
      newRegistration: null,
    };
  }

  private send(req: Request, res: Response, name: string, payload: Record<string, unknown>, status = 200): void {
    if ((req.header('accept') ?? '').includes('application/json')) res.status(status).json(payload);
    else res.status(status).type('application/xml').send(`<?xml version="1.0" encoding="UTF-8"?>\n${toXml(name, payload)}`);
  }

  private build(): Express {
    const app = newApp(this.core);
    app.use(express.urlencoded({ extended: false }));
    app.use(express.json());
    app.post('/api/v2/pins', (req, res) => {
      recordBody(res, req.body);
      const product = req.header('x-plex-product');
      const cid = req.header('x-plex-client-identifier');
      if (!product || !cid) {
        res.status(400).json({ errors: [{ code: 1000, message: 'X-Plex-Client-Identifier is missing', status: 400 }] });
        return;
      }
      const q = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
      const strongRaw = q.get('strong') ?? (req.body as Record<string, unknown> | undefined)?.strong;
      const strong = String(strongRaw ?? 'false') === 'true';
      const len = strong ? 25 : 4;
      const bytes = randomBytes(len);
      const code = [...bytes].map((b) => CODE_CHARS[b % CODE_CHARS.length]).join('');
      const now = Date.now();
      const pin: FakePin = { id: this.nextId++, code, product, clientIdentifier: cid, strong, createdAt: now, expiresAt: now + this.expiresIn * 1000, authToken: null };
      this.pinMap.set(pin.id, pin);
      this.send(req, res, 'pin', this.body(pin), 201);
    });
    app.get('/api/v2/pins/:id', (req, res) => {
      const pin = this.pinMap.get(Number(req.params.id));
      const cid = req.header('x-plex-client-identifier');
      if (!pin || pin.clientIdentifier !== cid || pin.expiresAt < Date.now()) {
        res.status(404).json({ errors: [{ code: 1020, message: 'Code not found or expired', status: 404 }] });
        return;
      }
      this.send(req, res, 'pin', this.body(pin));
    });
    app.get('/api/v2/user', (req, res) => {
      const token = req.header('x-plex-token') ?? new URLSearchParams(req.originalUrl.split('?')[1] ?? '').get('X-Plex-Token');
      if (!token || !this.tokens.has(token)) {
        res.status(401).json({ errors: [{ code: 1001, message: 'User could not be authenticated', status: 401 }] });
        return;
      }
      this.send(req, res, 'user', { id: 1, uuid: 'fakeuser0001', username: 'fakeplex', title: 'fakeplex', email: 'fake@example.invalid', authToken: token });
    });
    app.get('/api/v2/resources', (req, res) => {
      const token = req.header('x-plex-token') ?? new URLSearchParams(req.originalUrl.split('?')[1] ?? '').get('X-Plex-Token');
      if (!token || !this.tokens.has(token)) {
        res.status(401).json({ errors: [{ code: 1001, message: 'User could not be authenticated', status: 401 }] });
        return;
      }
      const list = this.servers.map((s) => ({
        name: s.name,
        product: 'Plex Media Server',
        provides: 'server',
        clientIdentifier: s.clientIdentifier,
        owned: true,
        accessToken: s.accessToken,
        connections: s.uris.map((uri) => {
          const u = new URL(uri);
          return { protocol: u.protocol.replace(':', ''), address: u.hostname, port: Number(u.port || 80), uri, local: true, relay: false };
        }),
      }));
      if ((req.header('accept') ?? '').includes('application/json')) res.json(list);
      else res.type('application/xml').send(`<?xml version="1.0" encoding="UTF-8"?>\n<MediaContainer size="${list.length}">${list.map((d) => toXml('Device', d as unknown as Record<string, unknown>)).join('')}</MediaContainer>`);
    });
    app.use((_req, res) => {
      res.status(404).json({ errors: [{ code: 1002, message: 'Not found', status: 404 }] });
    });
    return app;
  }
}

/** Builds a fake plex.tv. Call `start()` to listen on 127.0.0.1; link PINs with `approve(pinId)`. */
export function createFakePlexTv(opts: FakePlexTvOptions = {}): FakePlexTv {
  return new FakePlexTv(opts);
}
