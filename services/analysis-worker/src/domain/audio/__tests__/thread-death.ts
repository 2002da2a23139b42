import { Worker } from 'node:worker_threads';

/**
 * Makes the first analysis thread that is handed a job die right after it (as an out-of-memory thread would): spies on
 * `Worker.prototype.postMessage` (restore with jest.restoreAllMocks). @returns the workers jobs were posted to, in order
 */
export function killFirstThreadOnItsJob(): Worker[] {
  const workers: Worker[] = [];
  const post = Worker.prototype.postMessage;
  jest.spyOn(Worker.prototype, 'postMessage').mockImplementation(function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    workers.push(this);
    post.apply(this, args);
    if (workers.length === 1) void this.terminate();
  });
  return workers;
}
