/**
 * The thread that runs parser trials (trial-runner.ts starts it): a sandbox of its own, with the
 * workers' limits, in which each batch of trials is run by the worker's own conversion
 * (tryDefinition). isolated-vm's calls are synchronous: here they hold this thread, never the API's
 * event loop. One batch at a time, in the order they come.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../log/logger.ts';
import { createSandbox, type SandboxOptions } from '../sandbox/sandbox.ts';
import {
  tryDefinition,
  type DefinitionTestReport,
  type DefinitionTrialInput,
} from '../worker/definition-trial.ts';

/** What the thread is started with. */
export interface TrialThreadData {
  sandbox: Pick<SandboxOptions, 'timeoutMs' | 'memoryLimitMb' | 'maxIsolates' | 'isolateIdleMs'>;
  logLevel: string;
}

/** A batch sent to the thread. */
export interface TrialBatch {
  id: number;
  inputs: DefinitionTrialInput[];
}

/** What the runner sends: a batch, or the request to dispose the isolates and end. */
export type TrialThreadMessage = TrialBatch | { stop: true };

/** Its answer: a report per input, in order, or why the batch could not run at all. */
export type TrialBatchAnswer =
  { id: number; reports: DefinitionTestReport[] } | { id: number; error: string };

const port = parentPort;
if (port) {
  const data = workerData as TrialThreadData;
  const log = createLogger(data.logLevel, { component: 'definition-trials' });
  const sandbox = createSandbox({ ...data.sandbox, log });
  port.on('message', (message: TrialThreadMessage) => {
    if ('stop' in message) {
      sandbox.close();
      port.close();
      return;
    }
    const batch = message;
    let answer: TrialBatchAnswer;
    try {
      answer = { id: batch.id, reports: batch.inputs.map((input) => tryDefinition(sandbox, input)) };
    } catch (err) {
      answer = { id: batch.id, error: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(answer);
  });
}
