// A request's read (an API answer, a token check): beside the pipeline's queries, not behind them
// (Store.readQuery, embedded); elsewhere the store's own query already is that.
import type { Store } from './client.js';

export function requestRead<T>(store: Store, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
  return store.readQuery ? store.readQuery<T>(sql, params) : store.query<T>(sql, params);
}
