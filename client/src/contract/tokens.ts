// The form of a project token (`fh_` and 48 hex digits) and the scopes a token may hold, here
// rather than in the store's project repository so the API's authentication can check them
// without loading the store (the agent, src/main/agent.ts, authenticates with no store at all), and
// the CLI (`token create --scopes`) with no server code.
export const TOKEN_RE = /^fh_[0-9a-f]{48}$/;

export const SCOPES = ['ingest', 'read', 'quarantine', 'sql'] as const;
export type Scope = (typeof SCOPES)[number];
