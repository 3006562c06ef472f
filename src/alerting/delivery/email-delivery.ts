/**
 * Email delivery through SMTP (nodemailer) to the server of VIGIL_SMTP_URL, from VIGIL_SMTP_FROM.
 * The server's reply decides: 2xx delivered, 4xx (try later) and connection failures retried, 5xx
 * refused for good.
 */
import { createTransport } from 'nodemailer';
import type { DeliveryOutcome, Deliver } from '../deliverer.ts';
import type { OpenChannel } from '../channel-spec.ts';
import { emailMessage } from '../messages.ts';
import { networkOutcome } from './http-outcome.ts';

export interface EmailDeliveryDeps {
  /** VIGIL_SMTP_URL; undefined: every attempt fails (retried, so setting it later still delivers). */
  smtpUrl: string | undefined;
  from: string;
  timeoutMs: number;
}

export interface EmailDelivery {
  deliver: Deliver<Extract<OpenChannel, { type: 'email' }>>;
  close(): void;
}

interface SmtpError {
  responseCode?: number;
  response?: string;
}

export function createEmailDelivery(deps: EmailDeliveryDeps): EmailDelivery {
  let transport: ReturnType<typeof createTransport> | undefined;
  // The URL's settings win; the time limits apply where it sets none.
  const transporter = (url: string) =>
    (transport ??= createTransport({
      url,
      connectionTimeout: deps.timeoutMs,
      greetingTimeout: deps.timeoutMs,
      socketTimeout: deps.timeoutMs,
    }));
  return {
    async deliver(channel, content, id): Promise<DeliveryOutcome> {
      if (deps.smtpUrl === undefined) {
        return { ok: false, answer: 'not sent: VIGIL_SMTP_URL is not set', retryable: true };
      }
      const { subject, text } = emailMessage(content);
      try {
        const info = (await transporter(deps.smtpUrl).sendMail({
          from: deps.from,
          to: channel.to,
          subject,
          text,
          messageId: `<${id}@vigil>`,
          headers: { 'X-Vigil-Notification-Id': id },
        })) as { response?: string };
        const reply = info.response ?? '250';
        return { ok: true, answer: reply, status: Number(reply.slice(0, 3)) || 250, retryable: false };
      } catch (err) {
        const smtp = err as SmtpError;
        if (typeof smtp.responseCode === 'number') {
          return {
            ok: false,
            answer: (smtp.response ?? String(smtp.responseCode)).replace(/\s+/g, ' ').slice(0, 200),
            status: smtp.responseCode,
            retryable: smtp.responseCode < 500,
          };
        }
        return networkOutcome(err);
      }
    },
    close() {
      transport?.close();
    },
  };
}
