import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestDatabase } from '@polyphony/testkit';
import { ADMIN, API_TOKEN, createMigratedTestDatabase, startTestStack } from './helpers';

/** One request to the stack's port; resolves with status, headers and body. */
function send(mod: typeof http | typeof https, options: https.RequestOptions, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = mod.request({ host: '127.0.0.1', ...options }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The product with HTTPS=self-signed (README "HTTPS"): the certificate kept in DATA_DIR/tls across restarts. */
describe('HTTPS on the gateway port (HTTPS=self-signed)', () => {
  let db: TestDatabase;
  let dataDir: string;
  beforeAll(async () => {
    db = await createMigratedTestDatabase();
    dataDir = mkdtempSync(path.join(tmpdir(), 'polyphony-https-'));
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('When the product starts with HTTPS=self-signed, then it answers over TLS with the kept certificate (Secure session cookie), redirects plain HTTP, and reuses the certificate after a restart', async () => {
    const env = { HTTPS: 'self-signed', DATA_DIR: dataDir, HTTPS_HOSTNAMES: 'music.lan' };
    const first = await startTestStack(env, db);
    let fingerprint: string;
    try {
      const port = first.stack.port;
      const certPem = readFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
      fingerprint = new X509Certificate(certPem).fingerprint256;
      expect(first.stack.gateway.scheme).toBe('https');
      expect(first.stack.gateway.tls?.fingerprint256).toBe(fingerprint);
      expect(first.stack.gateway.tls?.subjectAltName).toContain('DNS:music.lan');
      // A client that trusts the kept certificate (what a browser does once the user accepts it).
      const me = await send(https, { port, path: '/api/me', ca: certPem, servername: 'localhost', headers: { authorization: `Bearer ${API_TOKEN}` } });
      expect(me.status).toBe(200);
      expect(JSON.parse(me.body)).toMatchObject({ role: 'admin' });
      const login = await send(https, { port, path: '/login', method: 'POST', ca: certPem, servername: 'localhost', headers: { 'content-type': 'application/json' } }, JSON.stringify(ADMIN));
      expect(login.status).toBe(200);
      expect([login.headers['set-cookie']].flat().find((c) => c?.startsWith('polyphony_session='))).toMatch(/; Secure/);
      // The web UI's page over TLS.
      expect((await send(https, { port, path: '/login', ca: certPem, servername: 'localhost' })).status).toBe(200);
      // Plain HTTP on the same port: sent to https.
      const plain = await send(http, { port, path: '/#/recording', headers: { host: `localhost:${port}` } });
      expect(plain.status).toBe(308);
      expect(plain.headers.location).toBe(`https://localhost:${port}/#/recording`);
      // A client that does not trust it is refused at the handshake.
      await expect(send(https, { port, path: '/healthz', servername: 'localhost' })).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    } finally {
      await first.stack.stop();
    }
    const second = await startTestStack(env, db);
    try {
      expect(second.stack.gateway.tls).toMatchObject({ generated: false, fingerprint256: fingerprint });
      const certPem = readFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
      expect((await send(https, { port: second.stack.port, path: '/healthz', ca: certPem, servername: 'localhost' })).status).toBe(200);
    } finally {
      await second.stack.stop();
    }
  });

  it('When HTTPS=custom names a key that is not the certificate\'s, then the product refuses to start', async () => {
    const other = mkdtempSync(path.join(tmpdir(), 'polyphony-https-other-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(other, 'key.pem'), '-out', path.join(other, 'cert.pem'), '-subj', '/CN=other', '-days', '1'], { stdio: 'ignore' });
      await expect(startTestStack({ HTTPS: 'custom', HTTPS_CERT: path.join(dataDir, 'tls', 'cert.pem'), HTTPS_KEY: path.join(other, 'key.pem') }, db)).rejects.toThrow(/is not the key of HTTPS_CERT/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
