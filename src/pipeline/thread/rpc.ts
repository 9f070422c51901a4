// Request/response over a worker_threads port, typed from a table of calls (protocol.ts). Each
// thread can both call the other and serve the other's calls on the same port: requests are
// `rpc`, answers `rpc-result`, and each side only receives the other's. Errors cross as
// {name, message, code} and are rethrown as Errors.
import type { MessagePort, Transferable, Worker } from 'node:worker_threads';

export type Port = Pick<MessagePort, 'postMessage' | 'on' | 'off'> | Pick<Worker, 'postMessage' | 'on' | 'off'>;

/** A table of calls: each name to the function type it stands for (protocol.ts). */
export type CallTable<C> = { [K in keyof C]: (...args: never[]) => unknown };
export type CallArgs<F> = F extends (...args: infer A) => unknown ? A : never;
export type CallResult<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

/**
 * What serves a table: one handler per call, with its arguments, answering its result (or the
 * result wrapped by `withTransfer`, to move buffers instead of copying them).
 */
export type Handlers<C extends CallTable<C>> = {
  [K in keyof C]: (...args: CallArgs<C[K]>) => Answer<CallResult<C[K]>> | Promise<Answer<CallResult<C[K]>>>;
};
type Answer<T> = T | Transferring<T>;

export interface RpcRequest {
  kind: 'rpc';
  id: number;
  method: string;
  args: unknown[];
}

export interface RpcResponse {
  kind: 'rpc-result';
  id: number;
  ok: boolean;
  value?: unknown;
  error?: { name: string; message: string; code?: string };
}

const TRANSFER = Symbol('transfer');
export interface Transferring<T> {
  [TRANSFER]: true;
  value: T;
  transfer: Transferable[];
}

export function withTransfer<T>(value: T, transfer: Transferable[]): Transferring<T> {
  return { [TRANSFER]: true, value, transfer };
}

function isTransferring(v: unknown): v is Transferring<unknown> {
  return typeof v === 'object' && v !== null && TRANSFER in v;
}

export class RpcClient<C extends CallTable<C>> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly onMessage = (msg: unknown): void => {
    const m = msg as Partial<RpcResponse>;
    if (m.kind !== 'rpc-result' || typeof m.id !== 'number') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(Object.assign(new Error(m.error?.message ?? 'remote call failed'), { name: m.error?.name ?? 'Error', code: m.error?.code }));
  };

  constructor(private readonly port: Port) {
    port.on('message', this.onMessage);
  }

  call<K extends keyof C & string>(name: K, ...args: CallArgs<C[K]>): Promise<CallResult<C[K]>> {
    return this.send(name, args, undefined);
  }

  /** As `call`, moving `transfer` (buffers of the arguments) to the other thread instead of copying them. */
  callTransferring<K extends keyof C & string>(transfer: Transferable[], name: K, ...args: CallArgs<C[K]>): Promise<CallResult<C[K]>> {
    return this.send(name, args, transfer);
  }

  private send<R>(method: string, args: readonly unknown[], transfer: Transferable[] | undefined): Promise<R> {
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const req: RpcRequest = { kind: 'rpc', id, method, args: [...args] };
      this.port.postMessage(req, transfer);
    });
  }

  /** Fails every call in flight (the other side is gone). */
  failAll(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  /** Stops listening on the port (calls in flight fail). */
  close(error = new Error('rpc client closed')): void {
    this.port.off('message', this.onMessage);
    this.failAll(error);
  }
}

export function serveRpc<C extends CallTable<C>>(port: Port, handlers: Handlers<C>): () => void {
  const table = handlers as unknown as Record<string, ((...a: unknown[]) => unknown) | undefined>;
  const onMessage = (msg: unknown): void => {
    const m = msg as Partial<RpcRequest>;
    if (m.kind !== 'rpc' || typeof m.id !== 'number' || typeof m.method !== 'string') return;
    const id = m.id;
    const handler = Object.hasOwn(table, m.method) ? table[m.method] : undefined;
    const reply = (res: RpcResponse, transfer?: Transferable[]): void => port.postMessage(res, transfer);
    if (!handler) {
      reply({ kind: 'rpc-result', id, ok: false, error: { name: 'Error', message: `unknown remote method ${m.method}` } });
      return;
    }
    Promise.resolve()
      .then(() => handler(...(m.args ?? [])))
      .then(
        (value) => {
          if (isTransferring(value)) reply({ kind: 'rpc-result', id, ok: true, value: value.value }, value.transfer);
          else reply({ kind: 'rpc-result', id, ok: true, value });
        },
        (err: unknown) => {
          const e = err instanceof Error ? err : new Error(String(err));
          const code = (e as { code?: unknown }).code;
          reply({ kind: 'rpc-result', id, ok: false, error: { name: e.name, message: e.message, code: typeof code === 'string' ? code : undefined } });
        },
      );
  };
  port.on('message', onMessage);
  return () => port.off('message', onMessage);
}
