// Data for a page: one async call keyed by its inputs; a stale answer (the inputs changed while it
// was on its way) is dropped, so a fast filter change never shows the previous filter's rows.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { asFailure, type ApiFailure } from '../api.js';

export interface QueryState<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  reload: () => void;
}

export function useQuery<T>(fn: () => Promise<T>, key: unknown[], opts: { refreshMs?: number } = {}): QueryState<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; loading: boolean }>({ loading: true });
  const seq = useRef(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const run = useCallback((background: boolean) => {
    const mine = ++seq.current;
    if (!background) setState((s) => ({ data: s.data, loading: true }));
    fnRef.current().then(
      (data) => {
        if (mine === seq.current) setState({ data, loading: false });
      },
      (e: unknown) => {
        if (mine === seq.current) setState((s) => ({ data: background ? s.data : undefined, error: asFailure(e), loading: false }));
      },
    );
  }, []);
  const keyString = JSON.stringify(key);
  useEffect(() => {
    setState({ loading: true });
    run(false);
    if (!opts.refreshMs) return;
    const timer = setInterval(() => run(true), opts.refreshMs);
    return () => clearInterval(timer);
  }, [keyString, opts.refreshMs, run]);
  useEffect(() => () => void (seq.current = -1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload: () => run(false) };
}
