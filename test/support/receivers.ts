/**
 * Real receivers of notifications on loopback, for alerting tests: an HTTP server that verifies
 * every webhook signature with the `standardwebhooks` package, the same server recording Slack
 * messages, and an SMTP server (`smtp-server`). Each records what arrived and answers as the test
 * says (status, headers, delay), so outages, refusals and slow receivers are real.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { SMTPServer } from 'smtp-server';
import { onTestFinished } from 'vitest';

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: unknown;
  /** The index of the secret that verified the signature, -1 when none did (or no secret given). */
  verifiedWith: number;
  /** What the receiver answered. */
  status: number;
  /** When the request arrived, epoch ms. */
  atMs: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (a slow receiver). */
  delayMs?: number;
  body?: string;
}

export interface HttpReceiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Requests answered 2xx. */
  accepted(): ReceivedRequest[];
  /** Decides each answer (default 200); `n` counts requests from 0. */
  respond: (req: { path: string; body: string }, n: number) => Answer;
  /** Secrets a signature may verify with (Standard Webhooks); empty: no check. */
  secrets: string[];
  stop(): Promise<void>;
  /** Listens again on the same port after stop(). */
  start(): Promise<void>;
}

export async function startHttpReceiver(
  opts: { secrets?: string[]; port?: number } = {},
): Promise<HttpReceiver> {
  let server: Server | undefined;
  const receiver: HttpReceiver = {
    url: '',
    port: opts.port ?? 0,
    requests: [],
    accepted: () => receiver.requests.filter((r) => r.status >= 200 && r.status < 300),
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
          receiver.requests.push({
            path: req.url ?? '',
            headers: req.headers,
            body,
            json,
            verifiedWith,
            status: answer.status,
            atMs: Date.now(),
          });
          const send = () => {
            if (res.destroyed) return;
            res.writeHead(answer.status, answer.headers ?? { 'content-type': 'text/plain' });
            res.end(answer.body ?? (answer.status < 300 ? 'ok' : 'no'));
          };
          if (answer.delayMs) setTimeout(send, answer.delayMs);
          else send();
        });
      });
      const s = server;
      await new Promise<void>((resolve) => s.listen(receiver.port, '127.0.0.1', resolve));
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
  onTestFinished(() => receiver.stop());
  return receiver;
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
