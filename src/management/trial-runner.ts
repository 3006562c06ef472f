/**
 * Runs parser trials off the event loop: in a thread of their own (trial-thread.ts), started on the
 * first trial and ended by `close()`. isolated-vm's calls are synchronous, so a replay of 2,000
 * payloads run here would hold the API's event loop for seconds; in the thread it holds only the
 * thread. Callers' trials go to the thread in batches of BATCH inputs, taking turns batch by batch,
 * so that a Run waits for at most one batch of a replay under way, not for all of it. At most
 * `maxWaiting` inputs wait (WORKBENCH_BUSY beyond). A thread that dies fails what it was running
 * (INTERNAL) and is started again by the next trial.
 */
import { Worker } from 'node:worker_threads';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import type { DefinitionTestReport, DefinitionTrialInput } from '../worker/definition-trial.ts';
import type { TrialBatch, TrialBatchAnswer, TrialThreadData, TrialThreadMessage } from './trial-thread.ts';

export interface TrialRunner {
  /** Runs every input and resolves to a report per input, in order. */
  run(inputs: readonly DefinitionTrialInput[]): Promise<DefinitionTestReport[]>;
  /** Ends the thread; trials waiting are refused (UNAVAILABLE). Safe to call twice. */
  close(): Promise<void>;
}

export interface TrialRunnerOptions {
  /** The workers' limits, and the bounds of the thread's isolates (VIGIL_SANDBOX_*). */
  sandbox: TrialThreadData['sandbox'];
  log: Logger;
  /** Inputs waiting at most, every caller's together (default 10,000). */
  maxWaiting?: number;
}

/** Inputs per message to the thread: a Run waits for at most this many of a replay's. */
const BATCH = 50;
const DEFAULT_MAX_WAITING = 10_000;
/** How long `close()` waits for the thread to end by itself before terminating it. */
const STOP_GRACE_MS = 10_000;

interface Job {
  inputs: readonly DefinitionTrialInput[];
  /** Inputs sent so far. */
  sent: number;
  reports: DefinitionTestReport[];
  resolve(reports: DefinitionTestReport[]): void;
  reject(err: unknown): void;
}

export function createTrialRunner(options: TrialRunnerOptions): TrialRunner {
  const maxWaiting = options.maxWaiting ?? DEFAULT_MAX_WAITING;
  const jobs: Job[] = [];
  let worker: Worker | undefined;
  let inFlight: { id: number; job: Job; count: number } | undefined;
  let nextId = 1;
  let turn = 0;
  let closed = false;

  const waiting = () => jobs.reduce((n, j) => n + j.inputs.length - j.reports.length, 0);

  function start(): Worker {
    const data: TrialThreadData = { sandbox: options.sandbox, logLevel: options.log.level };
    const w = new Worker(new URL('./trial-thread.ts', import.meta.url), { workerData: data, execArgv: [] });
    w.on('message', (answer: TrialBatchAnswer) => answered(answer));
    w.on('error', (err) => {
      options.log.error({ err }, 'the parser trial thread failed');
      failAll(w, new AppError('INTERNAL', 'The parser trial thread failed; try again.'));
    });
    w.on('exit', (code) => {
      if (!closed && code !== 0) options.log.warn({ code }, 'the parser trial thread exited');
      failAll(w, new AppError('INTERNAL', 'The parser trial thread stopped; try again.'));
    });
    return w;
  }

  /** Fails every trial of `w` (when it is still the thread), so that the next one starts another. */
  function failAll(w: Worker, err: AppError): void {
    if (worker !== w) return;
    worker = undefined;
    inFlight = undefined;
    for (const job of jobs.splice(0)) job.reject(err);
  }

  function answered(answer: TrialBatchAnswer): void {
    const flight = inFlight;
    if (!flight || flight.id !== answer.id) return;
    inFlight = undefined;
    const { job } = flight;
    if ('error' in answer) {
      jobs.splice(jobs.indexOf(job), 1);
      job.reject(new AppError('INTERNAL', `The parser trial could not run: ${answer.error}`));
    } else {
      for (const r of answer.reports) job.reports.push(r);
      if (job.reports.length === job.inputs.length) {
        jobs.splice(jobs.indexOf(job), 1);
        job.resolve(job.reports);
      } else {
        turn += 1;
      }
    }
    pump();
  }

  /** Sends the next batch, taking jobs in turn, when the thread is free. */
  function pump(): void {
    if (inFlight || closed) return;
    const ready = jobs.filter((j) => j.sent < j.inputs.length);
    if (ready.length === 0) {
      worker?.unref();
      return;
    }
    const job = ready[turn % ready.length] as Job;
    const inputs = job.inputs.slice(job.sent, job.sent + BATCH);
    job.sent += inputs.length;
    worker ??= start();
    worker.ref();
    const batch: TrialBatch = { id: nextId++, inputs };
    inFlight = { id: batch.id, job, count: inputs.length };
    worker.postMessage(batch);
  }

  /**
   * Asks the thread to dispose its isolates and end, once the batch it runs is done: a thread
   * terminated while it holds isolates can abort the whole process in isolated-vm's teardown. Only a
   * thread that has not ended within STOP_GRACE_MS (a parser past every limit) is terminated.
   */
  async function stop(w: Worker): Promise<void> {
    const ended = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.ref();
    w.postMessage({ stop: true } satisfies TrialThreadMessage);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), STOP_GRACE_MS);
    });
    const outcome = await Promise.race([ended, late]);
    clearTimeout(timer);
    if (outcome === 'late') await w.terminate();
  }

  return {
    run(inputs) {
      if (closed) return Promise.reject(new AppError('UNAVAILABLE', 'Vigil is stopping.'));
      if (inputs.length === 0) return Promise.resolve([]);
      if (waiting() + inputs.length > maxWaiting)
        return Promise.reject(
          new AppError('WORKBENCH_BUSY', 'Parser trials are busy with other runs; try again in a moment.', {
            retryAfterSeconds: 1,
          }),
        );
      return new Promise<DefinitionTestReport[]>((resolve, reject) => {
        jobs.push({ inputs, sent: 0, reports: [], resolve, reject });
        pump();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      const w = worker;
      worker = undefined;
      inFlight = undefined;
      for (const job of jobs.splice(0)) job.reject(new AppError('UNAVAILABLE', 'Vigil is stopping.'));
      if (w) await stop(w);
    },
  };
}
