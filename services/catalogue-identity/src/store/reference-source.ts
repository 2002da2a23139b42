/**
 * Readers of the reference implementation's database (issue 34, "Import from the reference"), both giving
 * every table as rows of TEXT values (PostgreSQL's text output: `bytea` as `\x` + hex, jsonb as JSON text,
 * booleans `t`/`f`, NULL as null), so the import reads one shape whatever the source:
 *
 * - {@link openPgReferenceSource}: a connection string. The session is set `default_transaction_read_only = on`
 *   and everything is read in one `REPEATABLE READ READ ONLY` transaction (one consistent snapshot; the
 *   import never writes there). Every value is fetched as text (node-postgres type parsers replaced).
 * - {@link openDumpReferenceSource}: a `pg_dump` file. Plain SQL is parsed for its `COPY <table> (<cols>) FROM
 *   stdin;` blocks (the text COPY format: `\N` null, backslash escapes); a custom-format dump (`PGDMP` magic)
 *   is turned into plain SQL by Debian's `pg_restore -f -` and parsed the same way. Why parse instead of
 *   restoring into a scratch database: no CREATE DATABASE right or second server is needed, nothing of the
 *   dump (functions, triggers, extensions) is ever executed, and the same reader serves both formats.
 *   The dump's tables are held in memory (about 2.5 KB per song with its 200-d vector as hex).
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Client } from 'pg';
import { ValidationError } from '@polyphony/platform';
import type { ReferenceRow, ReferenceSource } from '../domain/reference-import/source';

/** Keeps every value as PostgreSQL's text output. */
const TEXT_TYPES = { getTypeParser: () => (v: string) => v };

/**
 * Opens the reference database read-only (see module docs).
 * @throws ValidationError (400) when the server cannot be reached or refuses the login.
 */
export async function openPgReferenceSource(connectionString: string): Promise<ReferenceSource> {
  const client = new Client({ connectionString, types: TEXT_TYPES as never, connectionTimeoutMillis: 15_000, statement_timeout: 600_000 });
  try {
    await client.connect();
    await client.query('SET default_transaction_read_only = on');
    await client.query("SET bytea_output = 'hex'");
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new ValidationError(`Cannot open the reference database: ${scrub((err as Error).message, connectionString)}`);
  }
  const tables = new Set(
    ((await client.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)).rows as Array<{ table_name: string }>).map((r) => r.table_name),
  );
  return {
    tables: async () => tables,
    async rows(table: string): Promise<ReferenceRow[]> {
      if (!tables.has(table)) return [];
      return (await client.query(`SELECT * FROM "${table.replace(/"/g, '""')}"`)).rows as ReferenceRow[];
    },
    async close() {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/** A password in a connection string never reaches an error message. */
function scrub(message: string, connectionString: string): string {
  try {
    const pw = new URL(connectionString).password;
    return pw ? message.split(decodeURIComponent(pw)).join('***') : message;
  } catch {
    return message;
  }
}

/**
 * Reads a `pg_dump` file (plain SQL or custom format; see module docs).
 * @throws ValidationError (400) when the file is neither, or `pg_restore` refuses it.
 */
export async function openDumpReferenceSource(path: string): Promise<ReferenceSource> {
  const head = Buffer.alloc(5);
  const fh = await open(path, 'r');
  try {
    await fh.read(head, 0, 5, 0);
  } finally {
    await fh.close();
  }
  let input: Readable;
  let done: Promise<void> = Promise.resolve();
  if (head.toString('latin1') === 'PGDMP') {
    const child = spawn('pg_restore', ['--data-only', '-f', '-', path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()).length > 4000 && (stderr = stderr.slice(-4000)));
    input = child.stdout;
    done = new Promise((resolve, reject) => {
      child.on('error', (err) => reject(new ValidationError(`pg_restore is not available to read a custom-format dump: ${err.message}`)));
      child.on('close', (code) => (code === 0 ? resolve() : reject(new ValidationError(`pg_restore could not read the dump: ${stderr.trim().slice(0, 500)}`))));
    });
  } else {
    input = createReadStream(path);
  }
  const data = await parseCopyBlocks(input);
  await done;
  if (data.size === 0) throw new ValidationError('The file holds no COPY data: upload a pg_dump of the reference database (plain SQL or custom format)');
  return { tables: async () => new Set(data.keys()), rows: async (t) => data.get(t) ?? [], close: async () => undefined };
}

const COPY_HEAD = /^COPY\s+(?:"?[\w]+"?\.)?"?([\w]+)"?\s*\(([^)]*)\)\s+FROM\s+stdin;$/i;

/** The COPY blocks of a plain SQL dump: table name (schema dropped) -> rows. */
export async function parseCopyBlocks(input: Readable): Promise<Map<string, ReferenceRow[]>> {
  const out = new Map<string, ReferenceRow[]>();
  let table: string | undefined;
  let cols: string[] = [];
  let rows: ReferenceRow[] = [];
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    if (table === undefined) {
      const m = COPY_HEAD.exec(line);
      if (m) {
        table = m[1]!;
        cols = m[2]!.split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
        rows = out.get(table) ?? [];
      }
      continue;
    }
    if (line === '\\.') {
      out.set(table, rows);
      table = undefined;
      continue;
    }
    const fields = line.split('\t');
    const row: ReferenceRow = {};
    cols.forEach((c, i) => (row[c] = unescapeCopy(fields[i])));
    rows.push(row);
  }
  return out;
}

/** One field of the COPY text format (`\N` null; `\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`, octal and `\x` escapes). */
export function unescapeCopy(field: string | undefined): string | null {
  if (field === undefined || field === '\\N') return null;
  if (!field.includes('\\')) return field;
  let out = '';
  for (let i = 0; i < field.length; i++) {
    const ch = field[i]!;
    if (ch !== '\\' || i === field.length - 1) {
      out += ch;
      continue;
    }
    const n = field[++i]!;
    const simple: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };
    if (simple[n] !== undefined) out += simple[n];
    else if (/[0-7]/.test(n)) {
      const oct = /^[0-7]{1,3}/.exec(field.slice(i))![0];
      out += String.fromCharCode(parseInt(oct, 8));
      i += oct.length - 1;
    } else if (n === 'x' && /^[0-9a-fA-F]/.test(field[i + 1] ?? '')) {
      const hex = /^[0-9a-fA-F]{1,2}/.exec(field.slice(i + 1))![0];
      out += String.fromCharCode(parseInt(hex, 16));
      i += hex.length;
    } else out += n;
  }
  return out;
}
