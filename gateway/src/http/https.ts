/**
 * HTTPS on the gateway's own port (issue 33: browsers give a page the microphone only on HTTPS or
 * localhost, so recording a clip from a phone on the LAN needs TLS).
 *
 * Three modes (`HTTPS`): `off` (default, plain HTTP as before), `self-signed` (a certificate made once
 * with the `selfsigned` package and kept in `<DATA_DIR>/tls`, reused at every start so a browser's or
 * phone's trust in it lasts), or `custom` (the PEM files named by `HTTPS_CERT` and `HTTPS_KEY`, e.g. from
 * Let's Encrypt or a LAN CA). With TLS on, the port still accepts plain HTTP and answers it with a 308
 * redirect to the same URL over https, so an old bookmark or a typed `http://host:8000` keeps working: the
 * first byte of a connection tells the two apart (22 = a TLS handshake record, RFC 8446 section 5.1).
 */
import { createHash, createPrivateKey, randomUUID, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { RequestListener, Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';
import { drainConnections, handleClientErrors, type Logger } from '@polyphony/platform';

/** How the gateway serves its port: parsed from HTTPS / HTTPS_CERT / HTTPS_KEY / HTTPS_HOSTNAMES / DATA_DIR. */
export type HttpsSetting =
  | { mode: 'off' }
  /** `dir`: where cert.pem and key.pem are kept; `hostnames`: names and IPs the certificate must cover besides the automatic ones. */
  | { mode: 'self-signed'; dir: string; hostnames: string[] }
  | { mode: 'custom'; certFile: string; keyFile: string };

/** PEM credentials the TLS server uses, with what a user needs to check them. */
export interface TlsCredentials {
  cert: string;
  key: string;
  /** SHA-256 fingerprint of the certificate (DER), colon-separated upper-case hex, as browsers show it. */
  fingerprint256: string;
  /** Subject alternative names (`DNS:x, IP Address:y`, node's X509Certificate format). */
  subjectAltName: string;
  validTo: Date;
  source: 'self-signed' | 'custom';
  /** True when this start made the self-signed certificate (false: reused from the data directory, or custom). */
  generated: boolean;
}

/** Validity of a generated certificate: 825 days, the longest a TLS server certificate may have on Apple devices (their 2019 rule for user-trusted certificates). */
export const SELF_SIGNED_DAYS = 825;
/** A kept self-signed certificate expiring within this many days is replaced at start. */
export const RENEW_BEFORE_DAYS = 30;

/**
 * Parses the HTTPS settings of the environment. `HTTPS`: `off` (default), `self-signed`, or `custom`
 * (also implied when `HTTPS_CERT` and `HTTPS_KEY` are set without `HTTPS`).
 * @throws Error naming the variable on an unknown mode or `custom` without both files
 */
export function parseHttpsSetting(e: { HTTPS?: string; HTTPS_CERT?: string; HTTPS_KEY?: string; HTTPS_HOSTNAMES?: string; DATA_DIR: string }): HttpsSetting {
  const raw = (e.HTTPS ?? (e.HTTPS_CERT || e.HTTPS_KEY ? 'custom' : 'off')).trim().toLowerCase();
  if (['off', 'false', '0', 'no', ''].includes(raw)) return { mode: 'off' };
  if (raw === 'self-signed' || raw === 'selfsigned') {
    return { mode: 'self-signed', dir: path.resolve(e.DATA_DIR, 'tls'), hostnames: (e.HTTPS_HOSTNAMES ?? '').split(',').map((s) => s.trim()).filter(Boolean) };
  }
  if (raw === 'custom' || raw === 'on' || raw === 'true' || raw === '1') {
    if (!e.HTTPS_CERT || !e.HTTPS_KEY) throw new Error(`HTTPS=${raw} needs HTTPS_CERT and HTTPS_KEY (paths of the PEM certificate chain and private key); use HTTPS=self-signed for a generated certificate`);
    return { mode: 'custom', certFile: path.resolve(e.HTTPS_CERT), keyFile: path.resolve(e.HTTPS_KEY) };
  }
  throw new Error(`HTTPS must be off, self-signed or custom (got "${e.HTTPS}")`);
}

/** The names a generated certificate covers without configuration: localhost, loopback, this host's name (and `<name>.local`, mDNS) and its current non-loopback addresses. */
export function automaticHostnames(): string[] {
  const host = os.hostname();
  const addresses = Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal && !(a.family === 'IPv6' && a.address.startsWith('fe80')))
    .map((a) => a.address);
  return [...new Set(['localhost', '127.0.0.1', '::1', host, ...(host.includes('.') ? [] : [`${host}.local`]), ...addresses])];
}

/** A name in one spelling: lower case, IPv6 addresses compressed (`0:0:0:0:0:0:0:1` and `::1` are one address). */
function canonicalName(name: string): string {
  const n = name.trim().toLowerCase();
  return net.isIPv6(n) ? new URL(`http://[${n}]`).hostname.slice(1, -1) : n;
}

/** SAN names of a certificate as a set of canonical names (`DNS:` and `IP Address:` values). */
function sanNames(cert: X509Certificate): Set<string> {
  return new Set((cert.subjectAltName ?? '').split(',').map((s) => canonicalName(s.trim().replace(/^(DNS|IP Address):/i, ''))).filter(Boolean));
}

function credentialsOf(certPem: string, keyPem: string, source: TlsCredentials['source'], generated: boolean): TlsCredentials {
  const x = new X509Certificate(certPem);
  return { cert: certPem, key: keyPem, fingerprint256: x.fingerprint256, subjectAltName: x.subjectAltName ?? '', validTo: new Date(x.validTo), source, generated };
}

/** Writes a file through a temporary name and a rename, so a crash never leaves half a key. */
function writeAtomic(file: string, content: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

/**
 * The self-signed certificate of `dir` (cert.pem, key.pem with mode 600): reused when it exists, parses,
 * matches its key, is not within RENEW_BEFORE_DAYS of expiry and covers every name of `required`
 * (HTTPS_HOSTNAMES); made otherwise (EC P-256 key, SHA-256 signature, SELF_SIGNED_DAYS days, SAN =
 * automaticHostnames() + `required`, serverAuth). Reusing it is the point: a browser or phone told to
 * trust it (or its fingerprint) keeps trusting it across restarts.
 * @param now the clock (tests)
 */
export async function ensureSelfSigned(dir: string, required: string[], logger?: Logger, now = new Date()): Promise<TlsCredentials> {
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) {
    try {
      const certPem = readFileSync(certFile, 'utf8');
      const keyPem = readFileSync(keyFile, 'utf8');
      const x = new X509Certificate(certPem);
      const names = sanNames(x);
      const missing = required.filter((n) => !names.has(canonicalName(n)));
      const expiring = new Date(x.validTo).getTime() - now.getTime() < RENEW_BEFORE_DAYS * 86_400_000;
      if (!x.checkPrivateKey(createPrivateKey(keyPem))) logger?.warn('https: the kept key does not match the kept certificate; making a new pair', { dir });
      else if (expiring) logger?.warn('https: the kept self-signed certificate expires soon; making a new one (browsers and phones must trust it again)', { validTo: x.validTo });
      else if (missing.length) logger?.warn('https: HTTPS_HOSTNAMES names the kept certificate does not cover; making a new one (browsers and phones must trust it again)', { missing });
      else {
        const absent = automaticHostnames().filter((n) => !names.has(canonicalName(n)));
        if (absent.length) logger?.info('https: this host has names or addresses the kept certificate does not cover (a browser will warn when it is reached by them); add them to HTTPS_HOSTNAMES to make a new certificate', { absent });
        return credentialsOf(certPem, keyPem, 'self-signed', false);
      }
    } catch (err) {
      logger?.warn('https: the kept certificate is unreadable; making a new one', { dir, error: err instanceof Error ? err.message : String(err) });
    }
  }
  const names = [...new Set([...automaticHostnames(), ...required])];
  const altNames = names.map((n) => (net.isIP(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n }));
  const notBeforeDate = new Date(now.getTime() - 60_000);
  const pems = await generate([{ name: 'commonName', value: `polyphony on ${os.hostname()}` }, { name: 'organizationName', value: 'polyphony (self-signed)' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + SELF_SIGNED_DAYS * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomic(keyFile, pems.private, 0o600);
  writeAtomic(certFile, pems.cert, 0o644);
  return credentialsOf(pems.cert, pems.private, 'self-signed', true);
}

/**
 * Credentials for a setting: undefined when off, the kept or new self-signed pair, or the custom files.
 * @throws Error when a custom file is missing or unreadable, or the key does not match the certificate
 */
export async function loadTlsCredentials(setting: HttpsSetting, logger?: Logger): Promise<TlsCredentials | undefined> {
  if (setting.mode === 'off') return undefined;
  if (setting.mode === 'self-signed') return ensureSelfSigned(setting.dir, setting.hostnames, logger);
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`HTTPS_${what}: cannot read ${file} (${err instanceof Error ? err.message : String(err)})`);
    }
  };
  const cert = read(setting.certFile, 'CERT');
  const key = read(setting.keyFile, 'KEY');
  const creds = credentialsOf(cert, key, 'custom', false);
  if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error(`HTTPS_KEY (${setting.keyFile}) is not the key of HTTPS_CERT (${setting.certFile})`);
  return creds;
}

/** What `listenTls` returns: the listening front socket server, its port, and a graceful close. */
export interface TlsListener {
  server: net.Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish up to `graceMs`, then closes what is left. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Plain HTTP on the TLS port: reads the request head (up to 16 KiB, 10 s) and answers 308 to the same host and
 * path over https (a 308 keeps the method and body), or 400 in the error envelope when there is no usable Host.
 * Written by hand on the socket: the head is all that is needed, and node's HTTP parser would read the socket's
 * handle directly and miss the byte already taken to tell TLS from HTTP.
 */
function redirectToHttps(socket: net.Socket): void {
  let head = '';
  const timer = setTimeout(() => socket.destroy(), 10_000);
  timer.unref();
  const answer = (status: string, headers: string[], body: string) => {
    clearTimeout(timer);
    socket.removeAllListeners('data');
    socket.end(`HTTP/1.1 ${status}\r\n${headers.map((x) => `${x}\r\n`).join('')}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    head += chunk;
    const endOfHead = head.indexOf('\r\n\r\n');
    if (endOfHead < 0 && head.length < 16_384) return;
    const lines = head.slice(0, endOfHead < 0 ? head.length : endOfHead).split('\r\n');
    const target = lines[0]?.split(' ')[1] ?? '';
    const host = lines.find((l) => /^host:/i.test(l))?.slice(5).trim() ?? '';
    if (endOfHead < 0 || !target.startsWith('/') || !/^[A-Za-z0-9.:[\]-]+$/.test(host)) {
      answer('400 Bad Request', ['Content-Type: application/json; charset=utf-8'], JSON.stringify({ error: 'This port speaks HTTPS: use https:// and the same host and port', code: 'https_required', request_id: randomUUID() }));
      return;
    }
    answer('308 Permanent Redirect', [`Location: https://${host}${target}`, 'Content-Type: text/plain; charset=utf-8'], 'This port speaks HTTPS.\n');
  });
  socket.resume();
}

/**
 * Serves `handler` over TLS on `port` (0 = any) of `host`, and answers plain HTTP on the same port with a
 * redirect to https (redirectToHttps). One `net.Server` listens; each connection's first bytes pick where it
 * goes (0x16, a TLS handshake record: the https server, which reads what was already taken from the socket's
 * buffer before its own reads; anything else: the redirect). HTTP parser errors on the https side are
 * answered in the error envelope (`handleClientErrors`).
 */
export function listenTls(handler: RequestListener, creds: TlsCredentials, port: number, host: string, logger?: Logger): Promise<TlsListener> {
  const secure: HttpsServer = createHttpsServer({ cert: creds.cert, key: creds.key, minVersion: 'TLSv1.2' }, handler);
  handleClientErrors(secure as unknown as HttpServer, logger);
  secure.on('tlsClientError', (err: NodeJS.ErrnoException) => logger?.debug('https: TLS handshake failed', { code: err.code, message: err.message }));
  const front = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      if (chunk[0] === 0x16) secure.emit('connection', socket);
      else redirectToHttps(socket);
    });
  });
  return new Promise((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => {
      const addr = front.address();
      resolve({
        server: front,
        port: typeof addr === 'object' && addr ? addr.port : port,
        close: (graceMs = 10_000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => {
              secure.closeAllConnections();
              done();
            }, graceMs);
            timer.unref();
            // The front server counts every connection it accepted, whichever way it went: its close callback runs once all have ended.
            front.close(() => {
              clearTimeout(timer);
              done();
            });
            drainConnections(secure);
          }),
      });
    });
  });
}

/** SHA-256 of a PEM certificate's DER bytes, colon-separated hex (what `openssl x509 -fingerprint -sha256` prints). */
export function pemFingerprint256(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return createHash('sha256').update(der).digest('hex').toUpperCase().match(/../g)!.join(':');
}
