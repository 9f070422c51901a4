// The signed-in principal, shared by every page through context.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Session } from './api.js';

export interface SessionContext {
  session: Session;
  signOut: () => Promise<void>;
}

export const SessionCtx = createContext<SessionContext | null>(null);

export function useSession(): SessionContext {
  const s = useContext(SessionCtx);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}

export function hasScope(session: Session, scope: string): boolean {
  return session.principal.kind === 'admin' || session.principal.scopes.includes(scope);
}

export function isAdmin(session: Session): boolean {
  return session.principal.kind === 'admin';
}
