/**
 * Quiet hours of a route: a daily span of local time (`22:00-07:00`, crossing midnight or not) in
 * an IANA time zone, during which its notifications are held and sent as one digest when the span
 * ends. Local time comes from Intl (the platform's time-zone data, no library): DST changes move
 * the span with the clock, as people expect; an end that falls in a skipped hour ends the span at
 * the first instant after the gap.
 */

export interface QuietHours {
  /** Local start, `HH:MM` or `HH:MM:SS`. */
  from: string;
  /** Local end (exclusive). */
  to: string;
  /** IANA time zone, e.g. Europe/Amsterdam. */
  timeZone: string;
}

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;

const secondsOf = (clock: string): number => {
  const m = CLOCK.exec(clock);
  if (!m) return NaN;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0);
};

/** The reason `text`/`timeZone` are not valid quiet hours, or the parsed span. */
export function parseQuietHours(text: string, timeZone: string): QuietHours | string {
  const [from = '', to = '', ...rest] = text.split('-');
  if (rest.length > 0 || Number.isNaN(secondsOf(from)) || Number.isNaN(secondsOf(to))) {
    return `quiet hours ${JSON.stringify(text)}: expected HH:MM-HH:MM (24-hour clock), e.g. 22:00-07:00`;
  }
  if (secondsOf(from) === secondsOf(to)) return `quiet hours ${text}: start and end are the same`;
  try {
    formatter(timeZone);
  } catch {
    return `unknown time zone ${JSON.stringify(timeZone)}: use an IANA name such as Europe/Amsterdam or UTC`;
  }
  return { from, to, timeZone };
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  /** Seconds since local midnight. */
  seconds: number;
}

function localTime(ms: number, timeZone: string): LocalTime {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(ms))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = parts;
  return { year, month, day, seconds: hour * 3600 + minute * 60 + second };
}

/** Local offset from UTC at `ms`, in ms (whole seconds). */
function offsetMs(ms: number, timeZone: string): number {
  const t = localTime(ms, timeZone);
  const wholeMs = Math.floor(ms / 1000) * 1000;
  return Date.UTC(t.year, t.month - 1, t.day) + t.seconds * 1000 - wholeMs;
}

/** The instant the local clock of `timeZone` shows `seconds` on the given local date. */
function localToEpochMs(year: number, month: number, day: number, seconds: number, timeZone: string): number {
  const asUtc = Date.UTC(year, month - 1, day) + seconds * 1000;
  const first = asUtc - offsetMs(asUtc, timeZone);
  return asUtc - offsetMs(first, timeZone);
}

const isWithin = (s: number, from: number, to: number): boolean =>
  from < to ? s >= from && s < to : s >= from || s < to;

/** When the quiet span that holds `nowMs` ends (epoch ms), or undefined when `nowMs` is not quiet. */
export function quietUntil(q: QuietHours, nowMs: number): number | undefined {
  const from = secondsOf(q.from);
  const to = secondsOf(q.to);
  const now = localTime(nowMs, q.timeZone);
  if (!isWithin(now.seconds, from, to)) return undefined;
  // The end is later today, or (the span crosses midnight and it is evening) tomorrow.
  const endDate = new Date(Date.UTC(now.year, now.month - 1, now.day + (now.seconds < to ? 0 : 1)));
  const end = localToEpochMs(
    endDate.getUTCFullYear(),
    endDate.getUTCMonth() + 1,
    endDate.getUTCDate(),
    to,
    q.timeZone,
  );
  return Math.max(end, nowMs + 1000);
}
