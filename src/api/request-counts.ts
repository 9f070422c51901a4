// Answers per route pattern since start (requests, 4xx, 5xx), for the operators' pipeline page:
// the receivers' share of the live counters. Route patterns, not paths, so the map stays small.
export interface RouteCount {
  requests: number;
  clientErrors: number;
  serverErrors: number;
}

export class RequestCounts {
  private readonly byRoute = new Map<string, RouteCount>();

  record(r: { method: string; route: string; status: number }): void {
    const key = `${r.method} ${r.route}`;
    let c = this.byRoute.get(key);
    if (!c) {
      if (this.byRoute.size >= 1000) return; // patterns are few; a flood of unmatched ones is not worth keeping
      c = { requests: 0, clientErrors: 0, serverErrors: 0 };
      this.byRoute.set(key, c);
    }
    c.requests++;
    if (r.status >= 500) c.serverErrors++;
    else if (r.status >= 400) c.clientErrors++;
  }

  get(method: string, route: string): RouteCount {
    return { ...(this.byRoute.get(`${method} ${route}`) ?? { requests: 0, clientErrors: 0, serverErrors: 0 }) };
  }
}
