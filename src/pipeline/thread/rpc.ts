// Request/response over a worker_threads port. The pipeline thread calls the main thread's store
// and queue through it; errors cross as {name, message, code} and are rethrown as Errors.
import type { MessagePort, Transferable, Worker } from 'node:worker_threads';

export type Port = Pick<MessagePort, 'postMessage' | 'on' | 'off'> | Pick<Worker, 'postMessage' | 'on' | 'off'>;

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

/** A handler may return `{ value, transfer }` through `withTransfer` to move buffers instead of copying. */
export type RpcHandler = (...args: never[]) => unknown;

const TRANSFER = Symbol('transfer');
interface Transferring {
  [TRANSFER]: true;
  value: unknown;
  transfer: Transferable[];
}

export function withTransfer(value: unknown, transfer: Transferable[]): Transferring {
  return { [TRANSFER]: true, value, transfer };
}

function isTransferring(v: unknown): v is Transferring {
  return typeof v === 'object' && v !== null && TRANSFER in v;
}

export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  constructor(private readonly port: Port) {
    port.on('message', (msg: unknown) => {
      const m = msg as Partial<RpcResponse>;
      if (m.kind !== 'rpc-result' || typeof m.id !== 'number') return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(Object.assign(new Error(m.error?.message ?? 'remote call failed'), { name: m.error?.name ?? 'Error', code: m.error?.code }));
    });
  }

  call<T>(method: string, args: unknown[], transfer?: Transferable[]): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve, reject });
      const req: RpcRequest = { kind: 'rpc', id, method, args };
      this.port.postMessage(req, transfer);
    });
  }

  /** Fails every call in flight (the other side is gone). */
  failAll(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}

export function serveRpc(port: Port, handlers: Record<string, RpcHandler>): () => void {
  const onMessage = (msg: unknown): void => {
    const m = msg as Partial<RpcRequest>;
    if (m.kind !== 'rpc' || typeof m.id !== 'number' || typeof m.method !== 'string') return;
    const id = m.id;
    const handler = handlers[m.method];
    const reply = (res: RpcResponse, transfer?: Transferable[]): void => port.postMessage(res, transfer);
    if (!handler) {
      reply({ kind: 'rpc-result', id, ok: false, error: { name: 'Error', message: `unknown remote method ${m.method}` } });
      return;
    }
    Promise.resolve()
      .then(() => (handler as (...a: unknown[]) => unknown)(...(m.args ?? [])))
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
