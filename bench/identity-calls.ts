// The identity benches' view of the identity repository: each method's calls, rows and time.

/** Per identity-repository method: calls, rows returned (array length or map size), ms. */
export type CallStats = Record<string, { calls: number; rows: number; ms: number; ranAt?: number }>;

/**
 * Wraps every method `proto` declares on `repo` (an IdentityRepo, of this checkout or another) so
 * that its calls, returned rows and time land in the stats; a call made by another of its methods
 * (a private helper) is the outer call's. `onCall` sees each outer call's name and arguments first.
 */
export function instrumentIdentityRepo(repo: object, proto: object, onCall?: (name: string, args: unknown[]) => void): { stats: () => CallStats; take: () => CallStats } {
  let current: CallStats = {};
  let depth = 0;
  const target = repo as Record<string, (...args: unknown[]) => unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === 'constructor' || typeof target[name] !== 'function') continue;
    const original = target[name].bind(repo);
    target[name] = async (...args: unknown[]) => {
      if (depth > 0) return original(...args);
      onCall?.(name, args);
      const t = performance.now();
      depth++;
      let out: unknown;
      try {
        out = await original(...args);
      } finally {
        depth--;
      }
      const s = (current[name] ??= { calls: 0, rows: 0, ms: 0 });
      s.calls++;
      s.ms += performance.now() - t;
      if (Array.isArray(out)) {
        s.rows += out.length;
        // Candidates that carry where they ran (the presence lookup folded into the candidate query).
        for (const row of out as { ranAt?: unknown[] }[]) if (Array.isArray(row.ranAt)) s.ranAt = (s.ranAt ?? 0) + row.ranAt.length;
      } else if (out instanceof Map) s.rows += out.size;
      return out;
    };
  }
  return {
    stats: () => current,
    /** The stats so far, starting afresh. */
    take: () => {
      const c = current;
      current = {};
      return c;
    },
  };
}
