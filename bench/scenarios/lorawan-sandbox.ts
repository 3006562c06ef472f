/**
 * The lorawan scenario's sandbox calls alone: the codec's `decodeUplink` on uplinks
 * (`{uplink: {bytesHex, fPort, recvTimeMs}}`, what the worker hands it of a /tts/ message) against
 * the glue `parsePayload` on the same uplinks' JSON bodies, through `createSandbox` as the worker
 * calls it (one call per batch, results checked to be objects), in batches of BATCH_SIZES inputs.
 * Rounds alternate the two; the figure is the CPU µs per payload of the bench process around the
 * call (the isolate runs on the calling thread), the median over the rounds.
 */
import { SETTINGS } from '../../src/config/schema.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createSandbox, type ParserCode, type ParserInput } from '../../src/sandbox/sandbox.ts';
import type { BenchContext } from '../lib/context.ts';
import { FRAME_PORT, frameBytes, GLUE_PATH, lorawanUplink, lorawanValues, TTS_PATH } from '../lib/lorawan.ts';
import { median } from '../lib/stats.ts';

/** Inputs per call: the first is the figure's, the others are in its note. */
const BATCH_SIZES = [100, 400] as const;
/** Payloads each configuration decodes per round, whatever the batch size. */
const PAYLOADS_PER_ROUND = 40_000;
const WARMUP_CALLS = 200;

interface Decoder {
  name: string;
  code: ParserCode;
  inputs(batch: number): ParserInput[];
}

/** Uplinks of `batch` devices, their n-th each (n varies between batches of a round). */
function uplinksOf(batch: number, n: number) {
  const nowMs = Date.now();
  return Array.from({ length: batch }, (_, device) => ({
    device,
    message: lorawanUplink(device, n, nowMs),
    bytesHex: Buffer.from(frameBytes(lorawanValues(device, n))).toString('hex'),
    recvTimeMs: nowMs,
  }));
}

const DECODERS: Decoder[] = [
  {
    name: 'codec (decodeUplink)',
    code: { env: 'bench', id: 'def:private:codec', revision: 1, source: TTS_PATH.parser, format: 'ts013' },
    inputs: (batch) =>
      uplinksOf(batch, batch % 97).map((u) => ({
        uplink: { bytesHex: u.bytesHex, fPort: FRAME_PORT, recvTimeMs: u.recvTimeMs },
      })),
  },
  {
    name: 'parsePayload on the JSON body',
    code: { env: 'bench', id: 'def:private:glue', revision: 1, source: GLUE_PATH.parser },
    inputs: (batch) =>
      uplinksOf(batch, batch % 97).map((u) => {
        const body = GLUE_PATH.body(u.device, u.message);
        return { payloadStr: body, payloadRaw: body };
      }),
  },
];

/** CPU µs per payload of `calls` calls on `inputs`. */
function cpuPerPayloadUs(run: () => void, calls: number, payloads: number): number {
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / payloads;
}

export function measureSandboxCalls(ctx: BenchContext): void {
  const sandbox = createSandbox({
    timeoutMs: Number(SETTINGS.sandboxTimeoutMs.default),
    memoryLimitMb: Number(SETTINGS.sandboxMemoryMb.default),
    log: createLogger('silent'),
  });
  const rounds = ctx.opts.quick ? 3 : 7;
  try {
    const byBatch = BATCH_SIZES.map((batch) => {
      const runs = DECODERS.map((d) => {
        const inputs = d.inputs(batch);
        const run = () => {
          const outcomes = sandbox.run(d.code, inputs, { expectObject: true });
          if (!outcomes.every((o) => o.ok)) throw new Error(`${d.name}: ${JSON.stringify(outcomes[0])}`);
        };
        for (let i = 0; i < WARMUP_CALLS; i++) run();
        return { run, values: [] as number[] };
      });
      const calls = Math.ceil(PAYLOADS_PER_ROUND / batch);
      for (let r = 0; r < rounds; r++) {
        for (const d of r % 2 === 0 ? runs : [...runs].reverse())
          d.values.push(cpuPerPayloadUs(d.run, calls, calls * batch));
      }
      return { batch, runs: runs.map((r) => r.values) };
    });
    const [first, ...others] = byBatch;
    const said = others
      .map(
        (b) =>
          `${b.batch} per call: ${b.runs.map((v, i) => `${DECODERS[i]!.name} ${median(v).toFixed(2)} µs`).join(', ')}`,
      )
      .join('; ');
    DECODERS.forEach((d, i) =>
      ctx.report.add({
        id: `lorawan.sandbox.${d.code.format === 'ts013' ? 'codec' : 'parsePayload'}`,
        label: `sandbox call per payload, ${d.name}, ${first!.batch} per call`,
        unit: 'µs/payload',
        runs: first!.runs[i]!,
        note: `CPU of the bench process around createSandbox().run, ${rounds} rounds of ${PAYLOADS_PER_ROUND} payloads alternated, after ${WARMUP_CALLS} calls of warm-up; ${said}`,
      }),
    );
  } finally {
    sandbox.close();
  }
}
