// Data for a page: one async call keyed by its inputs; a stale answer (the inputs changed while it
// was on its way) is dropped, so a fast filter change never shows the previous filter's rows.
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { asFailure, type ApiFailure } from '../api.js';

export interface QueryState<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  reload: () => void;
}

export function useQuery<T>(fn: () => Promise<T>, key: unknown[], opts: { refreshMs?: number } = {}): QueryState<T> {
  const keyString = JSON.stringify(key);
  // `key`: the inputs the state belongs to.
  const [state, setState] = useState<{ key: string; data?: T; error?: ApiFailure; loading: boolean }>({ key: keyString, loading: true });
  const seq = useRef(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const keyRef = useRef(keyString);
  keyRef.current = keyString;
  const run = useCallback((background: boolean) => {
    const mine = ++seq.current;
    const forKey = keyRef.current;
    if (!background) setState((s) => ({ key: forKey, data: s.data, loading: true }));
    fnRef.current().then(
      (data) => {
        if (mine === seq.current) setState({ key: forKey, data, loading: false });
      },
      (e: unknown) => {
        if (mine === seq.current) setState((s) => ({ key: forKey, data: background ? s.data : undefined, error: asFailure(e), loading: false }));
      },
    );
  }, []);
  // A layout effect: the call starts as soon as the new inputs are rendered, not after the next
  // paint (a filter change would wait a frame for nothing).
  useLayoutEffect(() => {
    setState({ key: keyString, loading: true });
    run(false);
    if (!opts.refreshMs) return;
    const timer = setInterval(() => run(true), opts.refreshMs);
    return () => clearInterval(timer);
  }, [keyString, opts.refreshMs, run]);
  useEffect(() => () => void (seq.current = -1), []);
  const reload = () => run(false);
  // New inputs: the render that shows them is already loading (the old rows are not drawn again).
  if (state.key !== keyString) return { data: undefined, error: undefined, loading: true, reload };
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
