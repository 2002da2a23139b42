/**
 * Starts a real Subsonic-API server (Debian `supysonic` 0.7.x, API 1.10.2) for integration tests.
 *
 * How supysonic finds its configuration (read from /usr/lib/python3/dist-packages/supysonic/config.py):
 * `IniConfig.from_common_locations()` reads, in order, `/etc/supysonic`, `~/.supysonic`,
 * `~/.config/supysonic/supysonic.conf` and `./supysonic.conf`; later files override earlier ones.
 * There is no command-line or environment switch. So every command runs with the temp directory as
 * working directory (its `supysonic.conf` wins) and `HOME` pointed at it (no user-level file leaks in).
 *
 * Facts about this server worth knowing in tests (checked against 0.7.2):
 * - Auth: only `p` (clear or `enc:`) or HTTP Basic; token auth (`t`+`s`) is answered with code 10.
 *   Bad password → HTTP 200, `status:"failed"`, code 40.
 * - `createPlaylist` returns an empty `ok` (pre-1.14), no `playlist` object: the id must be read
 *   back with `getPlaylists`.
 * - `search3` with `query=` (empty) matches everything; `musicFolderId` is ignored there.
 * - `musicFolder.id` is a string ("1"); `path` is relative to the folder; `duration` whole seconds.
 * - Unknown methods (e.g. `getLyricsBySongId`) → HTTP 404 with a failed envelope (code 0).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@polyphony/platform';

const execFileAsync = promisify(execFile);

/** Options of {@link startSupysonic}. */
export interface SupysonicOptions {
  /** Absolute folder to add and scan (e.g. the Wesnoth music folder). */
  musicDir: string;
  user: string;
  password: string;
  /** Name of the music folder in supysonic (default `Music`). */
  folderName?: string;
  /** Give up waiting for `/rest/ping.view` after this many ms (default 30 000). */
  startTimeoutMs?: number;
}

/** A running supysonic. */
export interface StartedSupysonic {
  /** Base URL without trailing slash, e.g. `http://127.0.0.1:41234`; API under `/rest/`. */
  url: string;
  /** The temp directory holding config, SQLite DB and cache (removed by `close`). */
  dir: string;
  /** Process id of the server (for diagnostics). */
  pid: number;
  /** Adds another (non-admin) user with `supysonic-cli user add` while the server runs (households tests). */
  addUser(user: string, password: string): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes the temp directory. */
  close(): Promise<void>;
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(killTimer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Creates a temp dir with a supysonic config (SQLite DB inside it), adds the user and the music
 * folder, scans it in the foreground, then runs `supysonic-server -S waitress` on a free
 * 127.0.0.1 port and waits until `/rest/ping.view` answers `status:"ok"` for the user.
 * @throws Error when a CLI step fails or the server does not come up in time (temp dir removed).
 */
export async function startSupysonic(opts: SupysonicOptions): Promise<StartedSupysonic> {
  const dir = await mkdtemp(join(tmpdir(), 'supysonic-'));
  const folderName = opts.folderName ?? 'Music';
  const env = { ...process.env, HOME: dir, PYTHONDONTWRITEBYTECODE: '1' };
  try {
    await mkdir(join(dir, 'cache'));
    const conf = [
      '[base]',
      `database_uri = sqlite:///${join(dir, 'supysonic.db')}`,
      '',
      '[webapp]',
      `cache_dir = ${join(dir, 'cache')}`,
      'log_level = WARNING',
      'mount_webui = false',
      '',
      '[daemon]',
      `socket = ${join(dir, 'daemon.sock')}`,
      'run_watcher = false',
      '',
    ].join('\n');
    await writeFile(join(dir, 'supysonic.conf'), conf);
    const cli = async (args: string[]) => {
      try {
        return await execFileAsync('supysonic-cli', args, { cwd: dir, env, timeout: 120_000 });
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new Error(`supysonic-cli ${args[0]} ${args[1]} failed: ${e.stderr || e.message}`);
      }
    };
    await cli(['user', 'add', opts.user, '-p', opts.password]);
    await cli(['folder', 'add', folderName, opts.musicDir]);
    await cli(['folder', 'scan', '--foreground', folderName]);

    let lastError = '';
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const child = spawn('supysonic-server', ['-S', 'waitress', '-h', '127.0.0.1', '-p', String(port)], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
      });
      child.stdout?.resume();
      const url = `http://127.0.0.1:${port}`;
      const ready = await waitForPing(url, opts, child, opts.startTimeoutMs ?? 30_000);
      if (ready) {
        return {
          url,
          dir,
          pid: child.pid ?? -1,
          addUser: async (user: string, password: string) => {
            await cli(['user', 'add', user, '-p', password]);
          },
          close: async () => {
            await stopProcess(child);
            await rm(dir, { recursive: true, force: true });
          },
        };
      }
      lastError = stderr;
      await stopProcess(child);
    }
    throw new Error(`supysonic-server did not answer /rest/ping.view: ${lastError}`);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Polls ping every 100 ms; false when the child exits or the deadline passes. */
async function waitForPing(url: string, opts: SupysonicOptions, child: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const q = new URLSearchParams({ u: opts.user, p: opts.password, v: '1.12.0', c: 'polyphony-testkit', f: 'json' });
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    try {
      const res = await fetch(`${url}/rest/ping.view?${q}`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { 'subsonic-response'?: { status?: string } };
      if (body['subsonic-response']?.status === 'ok') return true;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
