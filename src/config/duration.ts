// Durations in a component's config, in the OpenTelemetry Collector's forms (`10s`, `500ms`, `5m`,
// `1h`) or a number of milliseconds: shared by the forwarding exporters and the memory_limiter.
import { z } from 'zod';

const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `10s`, `250ms`, `5m`, `1h`, or a number of milliseconds; 0 allowed (`max_elapsed_time: 0` is "no limit"). */
export const durationMs = z.union([
  z.number().nonnegative(),
  z.string().transform((text, ctx) => {
    const m = DURATION_RE.exec(text);
    if (!m) {
      ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(text)} (e.g. 10s, 500ms, 5m)` });
      return z.NEVER;
    }
    return Math.round(Number(m[1]) * UNIT_MS[m[2]!]!);
  }),
]);
