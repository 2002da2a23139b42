import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { automaticHostnames, ensureSelfSigned, listenTls, loadTlsCredentials, parseHttpsSetting, pemFingerprint256, RENEW_BEFORE_DAYS, SELF_SIGNED_DAYS, type TlsCredentials } from './https';

/** One request; resolves with status, location header and body. */
function fetchRaw(mod: typeof http | typeof https, options: https.RequestOptions, body?: string): Promise<{ status: number; location?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = mod.request(options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: text }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

describe('HTTPS on the gateway port (http/https.ts)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'polyphony-tls-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('When HTTPS is unset, self-signed or custom, then the setting parses; custom without files is refused', () => {
    expect(parseHttpsSetting({ DATA_DIR: '/data' })).toEqual({ mode: 'off' });
    expect(parseHttpsSetting({ HTTPS: 'off', DATA_DIR: '/data' })).toEqual({ mode: 'off' });
    expect(parseHttpsSetting({ HTTPS: 'self-signed', HTTPS_HOSTNAMES: 'music.lan, 192.168.1.20', DATA_DIR: '/data' })).toEqual({ mode: 'self-signed', dir: '/data/tls', hostnames: ['music.lan', '192.168.1.20'] });
    expect(parseHttpsSetting({ HTTPS_CERT: '/c.pem', HTTPS_KEY: '/k.pem', DATA_DIR: '/data' })).toEqual({ mode: 'custom', certFile: '/c.pem', keyFile: '/k.pem' });
    expect(() => parseHttpsSetting({ HTTPS: 'custom', HTTPS_CERT: '/c.pem', DATA_DIR: '/data' })).toThrow(/HTTPS_CERT and HTTPS_KEY/);
    expect(() => parseHttpsSetting({ HTTPS: 'maybe', DATA_DIR: '/data' })).toThrow(/off, self-signed or custom/);
  });

  it('When a self-signed certificate is asked for twice, then it is made once (key mode 600, localhost and the extra names covered) and reused', async () => {
    const first = await ensureSelfSigned(dir, ['music.lan', '10.1.2.3']);
    expect(first.generated).toBe(true);
    expect(statSync(path.join(dir, 'key.pem')).mode & 0o777).toBe(0o600);
    const x = new X509Certificate(readFileSync(path.join(dir, 'cert.pem')));
    expect(x.subjectAltName).toContain('DNS:localhost');
    expect(x.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(x.subjectAltName).toContain('DNS:music.lan');
    expect(x.subjectAltName).toContain('IP Address:10.1.2.3');
    expect(x.checkHost('localhost')).toBe('localhost');
    const days = (new Date(x.validTo).getTime() - new Date(x.validFrom).getTime()) / 86_400_000;
    expect(Math.round(days)).toBe(SELF_SIGNED_DAYS);
    expect(first.fingerprint256).toBe(x.fingerprint256);
    expect(pemFingerprint256(first.cert)).toBe(x.fingerprint256);
    const again = await ensureSelfSigned(dir, ['music.lan']);
    expect(again.generated).toBe(false);
    expect(again.fingerprint256).toBe(first.fingerprint256);
    expect(automaticHostnames()).toEqual(expect.arrayContaining(['localhost', '127.0.0.1', '::1']));
  });

  it('When the kept certificate is near expiry or misses a configured name, then a new one replaces it', async () => {
    const first = await ensureSelfSigned(dir, []);
    const nearExpiry = new Date(first.validTo.getTime() - (RENEW_BEFORE_DAYS - 1) * 86_400_000);
    const renewed = await ensureSelfSigned(dir, [], undefined, nearExpiry);
    expect(renewed.generated).toBe(true);
    expect(renewed.fingerprint256).not.toBe(first.fingerprint256);
    const widened = await ensureSelfSigned(dir, ['jukebox.home']);
    expect(widened.generated).toBe(true);
    expect(widened.subjectAltName).toContain('DNS:jukebox.home');
  });

  it('When custom files are given, then they are served; a key of another certificate is refused', async () => {
    const a = await ensureSelfSigned(path.join(dir, 'a'), []);
    const b = await ensureSelfSigned(path.join(dir, 'b'), []);
    const custom = await loadTlsCredentials({ mode: 'custom', certFile: path.join(dir, 'a', 'cert.pem'), keyFile: path.join(dir, 'a', 'key.pem') });
    expect(custom).toMatchObject({ source: 'custom', generated: false, fingerprint256: a.fingerprint256 });
    await expect(loadTlsCredentials({ mode: 'custom', certFile: path.join(dir, 'a', 'cert.pem'), keyFile: path.join(dir, 'b', 'key.pem') })).rejects.toThrow(/is not the key of HTTPS_CERT/);
    await expect(loadTlsCredentials({ mode: 'custom', certFile: path.join(dir, 'missing.pem'), keyFile: path.join(dir, 'b', 'key.pem') })).rejects.toThrow(/HTTPS_CERT: cannot read/);
    expect(b.fingerprint256).not.toBe(a.fingerprint256);
    expect(await loadTlsCredentials({ mode: 'off' })).toBeUndefined();
  });

  describe('one port, TLS and a redirect for plain HTTP', () => {
    let creds: TlsCredentials;
    let listener: Awaited<ReturnType<typeof listenTls>>;
    beforeEach(async () => {
      creds = await ensureSelfSigned(dir, []);
      listener = await listenTls(
        (req, res) => {
          let body = '';
          req.on('data', (d: Buffer) => (body += d.toString()));
          req.on('end', () => res.end(`${req.method} ${req.url} encrypted=${'encrypted' in req.socket} bytes=${body.length}`));
        },
        creds,
        0,
        '127.0.0.1',
      );
    });
    afterEach(() => listener.close(1000));

    it('When a client trusting the certificate posts over https, then the handler answers it over TLS', async () => {
      const res = await fetchRaw(https, { host: '127.0.0.1', port: listener.port, servername: 'localhost', ca: creds.cert, method: 'POST', path: '/api/x?y=1' }, 'z'.repeat(200_000));
      expect(res).toMatchObject({ status: 200, body: 'POST /api/x?y=1 encrypted=true bytes=200000' });
    });

    it('When a client does not trust the certificate, then the handshake fails (the browser warning a user resolves by trusting it)', async () => {
      await expect(fetchRaw(https, { host: '127.0.0.1', port: listener.port, servername: 'localhost', path: '/' })).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    });

    it('When plain HTTP reaches the port, then it is redirected to the same host and path over https (308), or refused without a usable Host', async () => {
      const res = await fetchRaw(http, { host: '127.0.0.1', port: listener.port, path: '/#/recording?x=1', headers: { host: `music.lan:${listener.port}` } });
      expect(res.status).toBe(308);
      expect(res.location).toBe(`https://music.lan:${listener.port}/#/recording?x=1`);
      const bad = await fetchRaw(http, { host: '127.0.0.1', port: listener.port, path: '/', headers: { host: 'evil.example/path' } });
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.body)).toMatchObject({ code: 'https_required' });
    });

    it('When openssl checks the served certificate, then it is the kept one (what a user compares with the logged fingerprint)', async () => {
      const certFile = path.join(dir, 'served.pem');
      // Asynchronously: the server answering the handshake runs in this process.
      const served = await new Promise<string>((resolve, reject) => {
        const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${listener.port}`, '-servername', 'localhost'], (err, stdout) => (stdout.includes('BEGIN CERTIFICATE') ? resolve(stdout) : reject(err ?? new Error(stdout))));
        child.stdin?.end();
      });
      writeFileSync(certFile, served.slice(served.indexOf('-----BEGIN CERTIFICATE-----'), served.indexOf('-----END CERTIFICATE-----') + 25));
      expect(new X509Certificate(readFileSync(certFile)).fingerprint256).toBe(creds.fingerprint256);
    });
  });
});
