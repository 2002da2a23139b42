/**
 * Private PostgreSQL and RabbitMQ instances for fault tests: each runs from a temp directory on
 * free ports, so a test may stop, kill and restart it without touching the shared local servers
 * (127.0.0.1:5432 and :5672 are never stopped).
 *
 * - PostgreSQL: `initdb` + `pg_ctl` from /usr/lib/postgresql/<version>/bin, trust auth, run as the
 *   `postgres` OS user when the test runs as root (initdb refuses root).
 * - RabbitMQ: `rabbitmq-server` with its own RABBITMQ_NODENAME, NODE_PORT, DIST_PORT, MNESIA_BASE,
 *   LOG_BASE, CONFIG_FILE and an empty ENABLED_PLUGINS_FILE (no management listener to collide with);
 *   the Debian wrapper drops root to the `rabbitmq` user, so its directory is handed to that user.
 *   Durable queues and persistent messages survive `restart()` (same mnesia directory).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { userInfo, tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@polyphony/platform';

const execFileAsync = promisify(execFile);

/** Resolves once 127.0.0.1:`port` accepts TCP connections; throws after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function pgBin(name: string): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no PostgreSQL under /usr/lib/postgresql');
  return `/usr/lib/postgresql/${versions[0]}/bin/${name}`;
}

async function chownTree(dir: string, user: string): Promise<void> {
  await execFileAsync('chown', ['-R', `${user}:${user}`, dir]);
}

/** A PostgreSQL server of our own (see module doc). */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly asUser: string | undefined,
    private readonly walDir?: string,
  ) {}

  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /**
   * initdb in a temp dir and start on a free port (fsync off: test data only). `parentDir` puts the instance's
   * directory there instead of the OS temp dir (e.g. on a small filesystem, to fill PostgreSQL's disk); `walDir`
   * (a directory that does not exist yet, removed by `destroy()`) keeps the write-ahead log elsewhere, as a server
   * with its WAL on its own volume (a full data volume then fails writes without a PANIC).
   */
  static async start(options: { parentDir?: string; walDir?: string } = {}): Promise<PrivatePostgres> {
    const dir = await mkdtemp(join(options.parentDir ?? tmpdir(), 'polyphony-pg-'));
    const asUser = userInfo().uid === 0 ? 'postgres' : undefined;
    if (asUser) await chownTree(dir, asUser);
    if (options.walDir) {
      await mkdir(options.walDir);
      if (asUser) await chownTree(options.walDir, asUser);
    }
    const pg = new PrivatePostgres(dir, await freePort(), asUser, options.walDir);
    await pg.run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', ...(options.walDir ? ['--waldir', options.walDir] : [])]);
    await pg.startServer();
    return pg;
  }

  private async run(bin: string, args: string[]): Promise<string> {
    const exe = await pgBin(bin);
    const [cmd, argv] = this.asUser ? ['runuser', ['-u', this.asUser, '--', exe, ...args]] : [exe, args];
    const { stdout } = await execFileAsync(cmd, argv, { timeout: 120_000, cwd: this.dir });
    return stdout;
  }

  private async startServer(): Promise<void> {
    await this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-l', join(this.dir, 'log'), '-w', '-t', '60', '-o', `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`, 'start']);
  }

  /** Stops the server: `fast` disconnects clients cleanly, `immediate` is a crash-like stop. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', 'stop']).catch(() => undefined);
  }

  /** Starts it again on the same port and data directory. */
  async restart(): Promise<void> {
    await this.startServer();
  }

  /** The postmaster's pid and its children's (backends, checkpointer, ...). */
  async pids(): Promise<number[]> {
    const main = Number((await readFile(join(this.dir, 'data', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    const { stdout } = await execFileAsync('pgrep', ['-P', String(main)]).catch(() => ({ stdout: '' }));
    return [main, ...stdout.split('\n').filter((l) => l.trim() !== '').map(Number)];
  }

  /**
   * Freezes the server: SIGSTOP to every one of its processes (a hung host or a network partition: connections
   * stay open, nothing answers, new connections are accepted by the kernel but never started). Until `thaw()`.
   */
  async freeze(): Promise<number> {
    this.frozen = await this.pids();
    this.signal(this.frozen, 'SIGSTOP');
    return this.frozen.length;
  }

  /** Ends a `freeze()`: SIGCONT to the processes it stopped. */
  thaw(): void {
    this.signal(this.frozen, 'SIGCONT');
    this.frozen = [];
  }

  private frozen: number[] = [];

  private signal(pids: number[], sig: NodeJS.Signals): void {
    for (const p of pids) {
      try {
        process.kill(p, sig);
      } catch {
        /* a backend that ended meanwhile */
      }
    }
  }

  /** Stops and removes the data directory. */
  async destroy(): Promise<void> {
    if (this.frozen.length > 0) this.thaw();
    await this.stop('immediate');
    await rm(this.dir, { recursive: true, force: true });
    if (this.walDir) await rm(this.walDir, { recursive: true, force: true });
  }
}

/** A RabbitMQ node of our own (see module doc). */
export class PrivateRabbit {
  private child?: ChildProcess;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly distPort: number,
    readonly nodeName: string,
  ) {}

  /** `amqp://guest:guest@127.0.0.1:<port>` (guest allowed over loopback only is lifted: loopback_users = none). */
  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  /** Creates the directory and config and starts the node; resolves when it accepts AMQP connections. */
  static async start(timeoutMs = 240_000): Promise<PrivateRabbit> {
    const dir = await mkdtemp(join(tmpdir(), 'polyphony-rmq-'));
    const port = await freePort();
    const distPort = await freePort();
    const r = new PrivateRabbit(dir, port, distPort, `polyphony-fault-${port}@localhost`);
    await mkdir(join(dir, 'mnesia'));
    await mkdir(join(dir, 'log'));
    await writeFile(join(dir, 'enabled_plugins'), '[].\n');
    await writeFile(join(dir, 'rabbitmq.conf'), `listeners.tcp.default = ${port}\nloopback_users = none\n`);
    if (userInfo().uid === 0) await chownTree(dir, 'rabbitmq');
    await r.startNode(timeoutMs);
    return r;
  }

  private env(): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: this.dir,
      RABBITMQ_NODENAME: this.nodeName,
      RABBITMQ_NODE_PORT: String(this.port),
      RABBITMQ_DIST_PORT: String(this.distPort),
      RABBITMQ_MNESIA_BASE: join(this.dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(this.dir, 'log'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(this.dir, 'enabled_plugins'),
      RABBITMQ_CONFIG_FILE: join(this.dir, 'rabbitmq'),
      RABBITMQ_PID_FILE: join(this.dir, 'pid'),
    };
  }

  private async startNode(timeoutMs: number): Promise<void> {
    this.child = spawn('rabbitmq-server', [], { env: this.env(), stdio: 'ignore', detached: false });
    await waitForPort(this.port, timeoutMs);
  }

  /** Runs `rabbitmqctl -n <node> <args>` against this node (same HOME, so the same Erlang cookie) and returns its stdout. */
  async ctl(args: string[]): Promise<string> {
    const { stdout } = await execFileAsync('rabbitmqctl', ['-n', this.nodeName, '-q', ...args], { env: this.env() });
    return stdout;
  }

  /** The Erlang VM's pid (from RABBITMQ_PID_FILE). */
  private async vmPid(): Promise<number | undefined> {
    const text = await readFile(join(this.dir, 'pid'), 'utf8').catch(() => '');
    const pid = Number(text.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** Stops the node (SIGTERM to the VM: a clean broker shutdown) and waits for it to exit. */
  async stop(): Promise<void> {
    const pid = await this.vmPid();
    if (pid) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
      const until = Date.now() + 60_000;
      while (Date.now() < until) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    this.child?.kill('SIGKILL');
    this.child = undefined;
  }

  /** Starts the node again (same data: durable queues and persistent messages survive). */
  async restart(timeoutMs = 240_000): Promise<void> {
    await this.startNode(timeoutMs);
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
