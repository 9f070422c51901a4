// Types of built-cli.js (plain JavaScript: bin/ runs before anything is transpiled).
export const ROOT: string;
export const SRC: string;
export const CLIENT_SRC: string;
export const SOURCES: string[];
export const CLI_DIST: string;
export const CURRENT: string;
export const STAMP: string;
export function newestMtime(dir: string): number;
export function freshBuild(sources?: string | string[], dist?: string): string | undefined;
