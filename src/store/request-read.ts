// A request's read (an API answer, a token check): beside the pipeline's queries, not behind them
// (Store.readQuery, embedded); elsewhere the store's own query already is that.
import type { Store } from './client.js';

export function requestRead<T>(store: Store, sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
  return store.readQuery ? store.readQuery<T>(sql, params) : store.query<T>(sql, params);
}

/**
 * The store as the API's repositories see it (src/main/api-deps.ts): every `query` is a request
 * read, beside the pipeline's queries; inserts and commands are the store's own. Without read
 * connections (a ClickHouse server) it is the store itself.
 */
export function requestReadStore(store: Store): Store {
  if (!store.readQuery) return store;
  return { ...store, query: <T>(sql: string, params?: Record<string, unknown>) => store.readQuery!<T>(sql, params) };
}
