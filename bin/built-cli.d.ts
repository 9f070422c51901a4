// Types of built-cli.js (plain JavaScript: bin/ runs before anything is transpiled).
export const ROOT: string;
export const SRC: string;
export const CLI_DIST: string;
export const CURRENT: string;
export const STAMP: string;
export function newestMtime(dir: string): number;
export function freshBuild(src?: string, dist?: string): string | undefined;
