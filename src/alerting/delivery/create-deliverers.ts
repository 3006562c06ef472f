/** The delivery adapters of every channel type, as the notifier and `vigil channel test` use them. */
import type { AddressGuard } from '../address-guard.ts';
import type { ChannelDeliverers } from '../deliverer.ts';
import { createEmailDelivery } from './email-delivery.ts';
import { createSlackDelivery, createWebhookDelivery } from './http-delivery.ts';
import { createPinnedPoster } from './pinned-request.ts';

export interface DeliverersConfig {
  guard: AddressGuard;
  /** VIGIL_NOTIFY_TIMEOUT_MS */
  timeoutMs: number;
  smtpUrl: string | undefined;
  smtpFrom: string;
  clock?: () => number;
}

export function createChannelDeliverers(config: DeliverersConfig): ChannelDeliverers {
  const poster = createPinnedPoster();
  const http = {
    guard: config.guard,
    poster,
    timeoutMs: config.timeoutMs,
    ...(config.clock ? { clock: config.clock } : {}),
  };
  const email = createEmailDelivery({
    smtpUrl: config.smtpUrl,
    from: config.smtpFrom,
    timeoutMs: config.timeoutMs,
  });
  return {
    webhook: createWebhookDelivery(http),
    slack: createSlackDelivery(http),
    email: email.deliver,
    close() {
      poster.close();
      email.close();
    },
  };
}
