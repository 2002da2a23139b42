/**
 * One run of an external command-line tool (ffmpeg, fpcalc) whose stdout is the result: spawn without a shell
 * (stdin ignored), a hard timeout that kills it (SIGKILL), the first 4 KiB of stderr kept for the error message,
 * and exactly one settlement whatever the order of `error`, `close` and the timer.
 */
import { spawn } from 'node:child_process';

/** How a run ended: the result, or the reason to reject with (and its cause). */
export type ToolOutcome<T> = { ok: T } | { fail: string; cause?: unknown };

export interface ToolRun<T> {
  /** Executable (looked up on PATH) and its arguments. */
  command: string;
  args: string[];
  /** Name in messages (`<name> timed out after <ms> ms`, `cannot run <name>: ...`). */
  name: string;
  /** Milliseconds before the process is killed and the run fails. */
  timeoutMs: number;
  /** Every stdout chunk, in order. */
  onStdout(chunk: Buffer): void;
  /** At exit: the exit code (null when killed), the signal, and the last non-empty line of stderr. */
  onClose(code: number | null, signal: NodeJS.Signals | null, lastError: string | undefined): ToolOutcome<T>;
  /** The error the promise rejects with, for a reason and its cause. */
  error(reason: string, cause?: unknown): Error;
}

/** Characters of stderr kept (the tail line is the message; tools can be chatty). */
const STDERR_LIMIT = 4096;

/**
 * Runs the tool and settles once: with `onClose`'s result, or rejected with `error(reason)` when it cannot be
 * started, times out, or `onClose` reports a failure.
 */
export function runTool<T>(run: ToolRun<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let stderr = '';
    let settled = false;
    const child = spawn(run.command, run.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      fail(`${run.name} timed out after ${run.timeoutMs} ms`);
      child.kill('SIGKILL');
    }, run.timeoutMs);
    function fail(reason: string, cause?: unknown): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(run.error(reason, cause));
    }
    child.stdout.on('data', (chunk: Buffer) => run.onStdout(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < STDERR_LIMIT) stderr += chunk.toString('utf8');
    });
    child.on('error', (e) => fail(`cannot run ${run.name}: ${e.message}`, e));
    child.on('close', (code, signal) => {
      if (settled) return;
      const outcome = run.onClose(code, signal, stderr.trim().split('\n').filter(Boolean).pop());
      if ('fail' in outcome) {
        fail(outcome.fail, outcome.cause);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(outcome.ok);
    });
  });
}
