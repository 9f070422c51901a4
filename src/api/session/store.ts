// Dashboard sessions, kept in this process's memory: the browser holds only a random id in an
// HttpOnly cookie, never the token it signed in with. Sessions end at their expiry, at sign-out,
// when the token behind them is revoked (checked on every request by the caller), and with the
// process (a restart asks people to sign in again, which beats keeping session ids on disk).
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../../client/src/contract/ids.js';
import type { Scope } from '../../store/projects.js';

/** Who signed in: a project token (its project and scopes), or the admin token (every project). */
export type SessionPrincipal =
  | { kind: 'project'; projectId: string; projectSlug: string; scopes: Scope[]; tokenId: string }
  | { kind: 'admin'; scopes: Scope[] };

export interface Session {
  /** SHA-256 of the cookie value: the map key (a heap dump does not hand out live cookies). */
  key: string;
  csrfToken: string;
  /** SHA-256 of the token signed in with: how each request re-checks that it still exists. */
  tokenHash: string;
  principal: SessionPrincipal;
  createdAt: number;
  expiresAt: number;
}

export interface SessionStoreOptions {
  ttlMs: number;
  /** The clock (default Date.now); tests move it past an expiry instead of waiting. */
  now?: () => number;
  /** Live sessions kept at most; the oldest go first beyond it. */
  maxSessions?: number;
}

export const SESSION_COOKIE = 'flakehouse_session';

export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  readonly now: () => number;
  private readonly max: number;

  constructor(private readonly opts: SessionStoreOptions) {
    this.now = opts.now ?? Date.now;
    this.max = opts.maxSessions ?? 100_000;
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /** A new session; the returned cookie value is what the browser keeps (32 random bytes, base64url). */
  create(principal: SessionPrincipal, tokenHash: string): { cookieValue: string; session: Session } {
    const cookieValue = randomBytes(32).toString('base64url');
    const now = this.now();
    const session: Session = {
      key: sha256Hex(cookieValue),
      csrfToken: randomBytes(32).toString('base64url'),
      tokenHash,
      principal,
      createdAt: now,
      expiresAt: now + this.opts.ttlMs,
    };
    if (this.sessions.size >= this.max) this.sweep();
    // Still full of live sessions: the oldest one makes room (Map keeps insertion order).
    if (this.sessions.size >= this.max) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(session.key, session);
    return { cookieValue, session };
  }

  /** The live session of a cookie value, or null (unknown, signed out, or expired). */
  get(cookieValue: string | undefined): Session | null {
    if (!cookieValue) return null;
    const key = sha256Hex(cookieValue);
    const s = this.sessions.get(key);
    if (!s) return null;
    if (s.expiresAt <= this.now()) {
      this.sessions.delete(key);
      return null;
    }
    return s;
  }

  delete(cookieValue: string | undefined): void {
    if (cookieValue) this.sessions.delete(sha256Hex(cookieValue));
  }

  /** Ends every session signed in with this token (after it is revoked). */
  endToken(tokenId: string): void {
    for (const [k, s] of this.sessions) if (s.principal.kind === 'project' && s.principal.tokenId === tokenId) this.sessions.delete(k);
  }

  get size(): number {
    return this.sessions.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [k, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(k);
  }
}
