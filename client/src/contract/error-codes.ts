// The error bodies the client reads (docs/contract.md §5: `{ error, message?, issues? }`). The server
// raises them (src/errors/catalogue.ts); the CLI turns them into what a person should do.

/** 403: the token lacks a scope the route needs; the message names the scope. */
export const INSUFFICIENT_SCOPE = 'insufficient_scope';

export function insufficientScopeMessage(scope: string): string {
  return `this token lacks the "${scope}" scope`;
}

/** The scope an INSUFFICIENT_SCOPE message names, when it names one. */
export function scopeNamedIn(message: string): string | undefined {
  return /lacks the "([\w-]+)" scope/.exec(message)?.[1];
}
