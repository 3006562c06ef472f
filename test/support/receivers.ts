/**
 * Real receivers of notifications on loopback, for alerting tests: an HTTP server that verifies
 * every webhook signature with the `standardwebhooks` package, the same server recording Slack
 * messages, and an SMTP server (`smtp-server`). Each records what arrived and answers as the test
 * says (status, headers, delay), so outages, refusals and slow receivers are real.
 *
 * HTTP receivers listen on ports held for them (receiver-ports.ts), which the tests' allow-list
 * names.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { SMTPServer } from 'smtp-server';
import { onTestFinished } from 'vitest';
import { portOf, releasePort, takeHeldPort } from './receiver-ports.ts';

export { RECEIVER_ALLOW_LIST } from './receiver-ports.ts';

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: unknown;
  /** The index of the secret that verified the signature, -1 when none did (or no secret given). */
  verifiedWith: number;
  /** What the receiver answers (or answered). */
  status: number;
  /**
   * `pending` while the answer is delayed or held, `sent` once it went out, `abandoned` when the
   * sender closed the connection before that.
   */
  reply: 'pending' | 'sent' | 'abandoned';
  /** When the request arrived, epoch ms. */
  atMs: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (a slow receiver). */
  delayMs?: number;
  /** Answer only once this settles (a receiver holding requests until the test lets them go). */
  after?: Promise<unknown>;
  body?: string;
}

export interface HttpReceiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Requests answered 2xx (the answer went out). */
  accepted(): ReceivedRequest[];
  /** Decides each answer (default 200); `n` counts requests from 0. */
  respond: (req: { path: string; body: string }, n: number) => Answer;
  /** Secrets a signature may verify with (Standard Webhooks); empty: no check. */
  secrets: string[];
  stop(): Promise<void>;
  /** Listens again on the same port after stop(). */
  start(): Promise<void>;
}

/**
 * An HTTP receiver on one of the held ports (listed in RECEIVER_ALLOW_LIST), or on `port` when
 * given (0: any free port, which no allow-list of the test's admits).
 */
export async function startHttpReceiver(
  opts: { secrets?: string[]; port?: number } = {},
): Promise<HttpReceiver> {
  let server: Server | undefined;
  let held = opts.port === undefined ? takeHeldPort() : undefined;
  const receiver: HttpReceiver = {
    url: '',
    port: opts.port ?? portOf(held as NetServer),
    requests: [],
    accepted: () => receiver.requests.filter((r) => r.reply === 'sent' && r.status >= 200 && r.status < 300),
    respond: () => ({ status: 200 }),
    secrets: opts.secrets ?? [],
    async start() {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const n = receiver.requests.length;
          const answer = receiver.respond({ path: req.url ?? '', body }, n);
          let json: unknown;
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          const verifiedWith = receiver.secrets.findIndex((s) => {
            try {
              new Webhook(s).verify(body, req.headers as Record<string, string>);
              return true;
            } catch {
              return false;
            }
          });
          const received: ReceivedRequest = {
            path: req.url ?? '',
            headers: req.headers,
            body,
            json,
            verifiedWith,
            status: answer.status,
            reply: 'pending',
            atMs: Date.now(),
          };
          receiver.requests.push(received);
          res.on('close', () => {
            if (received.reply === 'pending') received.reply = 'abandoned';
          });
          const send = () => {
            if (res.destroyed) return;
            res.writeHead(answer.status, answer.headers ?? { 'content-type': 'text/plain' });
            res.end(answer.body ?? (answer.status < 300 ? 'ok' : 'no'));
            received.reply = 'sent';
          };
          if (answer.after) void answer.after.then(send, send);
          else if (answer.delayMs) setTimeout(send, answer.delayMs);
          else send();
        });
      });
      const s = server;
      const holder = held;
      held = undefined;
      // The held socket itself is handed over, so no other process can take the port in between.
      if (holder) await new Promise<void>((resolve) => s.listen(holder, resolve));
      else await new Promise<void>((resolve) => s.listen(receiver.port, '127.0.0.1', resolve));
      s.ref();
      receiver.port = (s.address() as AddressInfo).port;
      receiver.url = `http://127.0.0.1:${receiver.port}`;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
  await receiver.start();
  const fromPool = opts.port === undefined;
  onTestFinished(async () => {
    await receiver.stop();
    if (fromPool) await releasePort(receiver.port);
  });
  return receiver;
}

/** Answers a receiver holds back until the test lets them go (see holdAnswersAfter). */
export interface HeldAnswers {
  /** Requests whose answer was held (so far). */
  held(): ReceivedRequest[];
  /** Of those, the ones whose sender is still waiting for the answer. */
  waiting(): ReceivedRequest[];
  /** Sends every held answer whose sender is still waiting, and holds no more. */
  release(): void;
}

/**
 * From now on `receiver` answers its next `count` requests as `respond` says and holds the answer
 * to every later one until `release()`. A fault injected once a request is held finds exactly
 * `count` of them answered and the rest in flight, however fast or slow the machine is.
 */
export function holdAnswersAfter(receiver: HttpReceiver, count: number): HeldAnswers {
  const respond = receiver.respond;
  const gate = Promise.withResolvers<void>();
  const heldAt: number[] = [];
  let passed = 0;
  receiver.respond = (req, n) => {
    const answer = respond(req, n);
    if (passed < count) {
      passed += 1;
      return answer;
    }
    heldAt.push(n); // the request's index in receiver.requests, recorded right after
    return { ...answer, after: gate.promise };
  };
  const held = () => heldAt.flatMap((n) => receiver.requests[n] ?? []);
  return {
    held,
    waiting: () => held().filter((r) => r.reply === 'pending'),
    release() {
      receiver.respond = respond;
      gate.resolve();
    },
  };
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** Decoded (RFC 2047 encoded words). */
  subject: string;
  /** The body, decoded from quoted-printable where it is. */
  text: string;
}

/** Bytes of `=XX` escapes and the rest as UTF-8. */
function decodeQ(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '=' && /^[0-9A-F]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(text[i] ?? '', 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`) of a header. */
function decodeHeader(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi, (_m, enc: string, word: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(word, 'base64').toString('utf8')
        : decodeQ(word.replace(/_/g, ' ')),
    );
}

function bodyText(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split);
  const body = raw.slice(split + 4);
  return /Content-Transfer-Encoding: quoted-printable/i.test(head)
    ? decodeQ(body.replace(/=\r\n/g, ''))
    : body;
}

export interface SmtpReceiver {
  url: string;
  mails: ReceivedMail[];
  /** SMTP reply code for the next messages (250 = accept). */
  replyCode: number;
  stop(): Promise<void>;
}

export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const receiver: SmtpReceiver = { url: '', mails: [], replyCode: 250, stop: () => Promise.resolve() };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (receiver.replyCode !== 250) {
          const err = Object.assign(new Error('mailbox unavailable'), { responseCode: receiver.replyCode });
          callback(err);
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const subject = decodeHeader(
          /^Subject: (.*(?:\r\n[ \t].*)*)/im.exec(raw)?.[1]?.replace(/\r\n[ \t]/g, ' ') ?? '',
        );
        receiver.mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          subject,
          text: bodyText(raw),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  receiver.url = `smtp://127.0.0.1:${port}`;
  receiver.stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  onTestFinished(() => receiver.stop());
  return receiver;
}
