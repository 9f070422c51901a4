// The form of a project token (`fh_` and 48 hex digits), here rather than in the store's project
// repository so the API's authentication can check it without loading the store (the agent,
// src/agent.ts, authenticates with no store at all).
export const TOKEN_RE = /^fh_[0-9a-f]{48}$/;
