import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { once } from 'node:events';
import { createGunzip, createGzip, type Gzip } from 'node:zlib';
import type { Writable } from 'node:stream';
import { SECRET_KEYS } from '@polyphony/contracts';
import { ValidationError } from '@polyphony/platform';

/**
 * The polyphony backup archive, format version 1: a gzip stream of newline-delimited JSON.
 *
 *   {"format":"polyphony-backup","version":1,"createdAt":...,"schemas":{"catalogue":["<migration>",...]},"secrets":"encrypted"|"excluded","kdf":{...}}
 *   {"table":"catalogue.score","columns":["item_id",...]}
 *   {"r":{...row as row_to_json...}}            (one line per row)
 *   ...
 *   {"end":true,"rows":<n>,"tables":<n>,"sha256":"<hex of every line above, newline included>"}
 *
 * The trailer's sha256 is checked before anything is restored (gzip's CRC only covers transport).
 * Secret values (media-server tokens/passwords/API keys, secret settings) are AES-256-GCM
 * encrypted with a key derived by scrypt (N=2^15, r=8, p=1; RFC 7914) from the user's passphrase,
 * or left out when no passphrase is given.
 */
export const BACKUP_FORMAT = 'polyphony-backup';

/** Secret keys inside a `creds` jsonb column (the registry's media-server credentials). */
export const CREDENTIAL_SECRET_KEYS: readonly string[] = SECRET_KEYS;
/** Keys of key/value settings tables whose values are secrets. */
export const SECRET_SETTING = /(secret|token|password|api_?key)/i;
export const BACKUP_FORMAT_VERSION = 1;

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  createdAt: string;
  appVersion: string;
  /** Applied migration names per schema, in order. */
  schemas: Record<string, string[]>;
  secrets: 'encrypted' | 'excluded';
  kdf?: { salt: string; N: number; r: number; p: number; check: string };
}

export interface TableHeader {
  table: string;
  columns: string[];
}

const KDF = { N: 1 << 15, r: 8, p: 1 };
const CHECK_PLAINTEXT = 'polyphony-backup-key-check';

/** A passphrase-derived key that encrypts/decrypts secret values. */
export class SecretCipher {
  private constructor(
    private readonly key: Buffer,
    readonly kdf: NonNullable<BackupHeader['kdf']>,
  ) {}

  /** New key with a random salt (for writing an archive). */
  static create(passphrase: string): SecretCipher {
    const salt = randomBytes(16);
    const key = derive(passphrase, salt, KDF);
    const c = new SecretCipher(key, { salt: salt.toString('base64'), ...KDF, check: '' });
    c.kdf.check = c.encrypt(CHECK_PLAINTEXT);
    return c;
  }

  /** The key of an archive; ValidationError (400) on a wrong passphrase. */
  static open(passphrase: string, kdf: NonNullable<BackupHeader['kdf']>): SecretCipher {
    if (!(kdf.N <= 1 << 20 && kdf.r <= 16 && kdf.p <= 4)) throw new ValidationError('Backup key parameters are out of range');
    const c = new SecretCipher(derive(passphrase, Buffer.from(kdf.salt, 'base64'), kdf), kdf);
    let plain: string | undefined;
    try {
      plain = c.decrypt(kdf.check);
    } catch {
      plain = undefined;
    }
    if (plain !== CHECK_PLAINTEXT) throw new ValidationError('Wrong passphrase for this backup');
    return c;
  }

  /** base64(iv 12 | tag 16 | ciphertext). */
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
  }

  decrypt(sealed: string): string {
    const buf = Buffer.from(sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, buf.subarray(0, 12));
    decipher.setAuthTag(buf.subarray(12, 28));
    return Buffer.concat([decipher.update(buf.subarray(28)), decipher.final()]).toString('utf8');
  }
}

function derive(passphrase: string, salt: Buffer, p: { N: number; r: number; p: number }): Buffer {
  return scryptSync(passphrase, salt, 32, { N: p.N, r: p.r, p: p.p, maxmem: 256 * p.N * p.r });
}

/** Streams archive lines into a gzip file, hashing as it goes. */
export class ArchiveWriter {
  private readonly gzip: Gzip;
  private readonly out: Writable;
  private readonly hash: Hash = createHash('sha256');
  rows = 0;
  tables = 0;

  constructor(path: string) {
    this.gzip = createGzip({ level: 6 });
    this.out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    this.gzip.pipe(this.out);
  }

  private async line(obj: unknown): Promise<void> {
    const text = `${JSON.stringify(obj)}\n`;
    this.hash.update(text);
    if (!this.gzip.write(text)) await once(this.gzip, 'drain');
  }

  header(h: BackupHeader): Promise<void> {
    return this.line(h);
  }

  table(t: TableHeader): Promise<void> {
    this.tables++;
    return this.line(t);
  }

  row(r: Record<string, unknown>): Promise<void> {
    this.rows++;
    return this.line({ r });
  }

  /** Writes the trailer and closes the file; returns the trailer's checksum. */
  async finish(): Promise<string> {
    const sha256 = this.hash.digest('hex');
    this.gzip.end(`${JSON.stringify({ end: true, rows: this.rows, tables: this.tables, sha256 })}\n`);
    await once(this.out, 'finish');
    return sha256;
  }

  /** Closes the file after a failure (the caller deletes it). */
  async abort(): Promise<void> {
    this.gzip.end();
    await once(this.out, 'close').catch(() => undefined);
  }
}

export type ArchiveItem = { kind: 'table'; table: TableHeader } | { kind: 'row'; row: Record<string, unknown> };

/**
 * Reads an archive. `verify()` reads it once completely and checks format, version and checksum
 * (ValidationError on any defect) and returns the header; `items()` then streams its tables and rows.
 */
export class ArchiveReader {
  constructor(private readonly path: string) {}

  /** Lines of the decompressed archive; read and decompression errors surface in the iteration. */
  private async *lines(): AsyncGenerator<string> {
    const source = createReadStream(this.path);
    const gunzip = createGunzip();
    source.on('error', (err) => gunzip.destroy(err));
    source.pipe(gunzip);
    const decoder = new StringDecoder('utf8');
    let carry = '';
    try {
      for await (const chunk of gunzip as AsyncIterable<Buffer>) {
        const parts = (carry + decoder.write(chunk)).split('\n');
        carry = parts.pop()!;
        for (const line of parts) yield line;
      }
      carry += decoder.end();
      if (carry.length) yield carry;
    } finally {
      source.destroy();
      gunzip.destroy();
    }
  }

  async verify(): Promise<BackupHeader> {
    const hash = createHash('sha256');
    let header: BackupHeader | undefined;
    let trailer: { end: true; rows: number; sha256: string } | undefined;
    let rows = 0;
    try {
      for await (const line of this.lines()) {
        if (trailer) throw new ValidationError('Backup archive has data after its end marker');
        const obj = parseLine(line);
        if (!header) {
          header = checkHeader(obj);
        } else if (obj.end === true) {
          trailer = obj as unknown as typeof trailer;
          continue;
        } else if ('r' in obj) rows++;
        hash.update(`${line}\n`);
      }
    } catch (err) {
      if (err instanceof ValidationError) throw err;
      throw new ValidationError(`Backup archive is unreadable: ${(err as Error).message}`);
    }
    if (!header) throw new ValidationError('Backup archive is empty');
    if (!trailer) throw new ValidationError('Backup archive is truncated (no end marker)');
    if (trailer.sha256 !== hash.digest('hex') || trailer.rows !== rows) throw new ValidationError('Backup archive checksum does not match: the file is corrupted');
    return header;
  }

  async *items(): AsyncGenerator<ArchiveItem> {
    let first = true;
    for await (const line of this.lines()) {
      const obj = parseLine(line);
      if (first) {
        first = false;
        continue;
      }
      if (obj.end === true) return;
      if ('r' in obj) yield { kind: 'row', row: obj.r as Record<string, unknown> };
      else if (typeof obj.table === 'string' && Array.isArray(obj.columns)) yield { kind: 'table', table: obj as unknown as TableHeader };
      else throw new ValidationError('Backup archive has an unknown line');
    }
  }
}

function parseLine(line: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(line);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* falls through */
  }
  throw new ValidationError('Backup archive has a malformed line');
}

function checkHeader(obj: Record<string, unknown>): BackupHeader {
  if (obj.format !== BACKUP_FORMAT) throw new ValidationError('Not a polyphony backup archive');
  if (obj.version !== BACKUP_FORMAT_VERSION) throw new ValidationError(`Backup format version ${String(obj.version)} is not supported (this version reads ${BACKUP_FORMAT_VERSION})`);
  if (!obj.schemas || typeof obj.schemas !== 'object') throw new ValidationError('Backup archive header has no schema list');
  return obj as unknown as BackupHeader;
}
