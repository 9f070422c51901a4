// Agent-mode test plumbing, shared by the otlp_http and otlp_grpc forwarding tests: a port free now
// (so a gateway restarts on the same address) and the gateway's runs whose branch starts with a prefix.
import { createServer } from 'node:net';
import type { TestDaemon } from './daemon.js';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface RunItem {
  id: string;
  branch: string;
  counts: { total: number };
}

export async function gatewayRuns(gw: TestDaemon, prefix: string): Promise<RunItem[]> {
  const out: RunItem[] = [];
  let cursor: string | null = null;
  do {
    const res = await gw.request('GET', `/v1/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /v1/runs: ${res.status} ${res.text}`);
    out.push(...(res.json.items as RunItem[]).filter((r) => r.branch.startsWith(prefix)));
    cursor = res.json.nextCursor as string | null;
  } while (cursor);
  return out;
}
