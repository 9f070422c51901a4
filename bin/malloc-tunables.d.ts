// Types of malloc-tunables.js (plain JavaScript: bin/ runs before anything is transpiled).
export const MALLOC_TUNABLE: string;
export function withMallocTunable(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv | undefined;
export function reexecWithMallocTunable(argv?: string[]): void;
