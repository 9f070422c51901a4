// Every `flakehouse …` command the dashboard tells people to run is one the CLI has: the command,
// and its subcommand where the CLI's usage lists fixed ones (`project create`, `token revoke`), so
// a hint like `npx flakehouse project settings` (exit 2: no such subcommand) cannot return.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/main/cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function webSources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? webSources(p) : /\.(ts|tsx)$/.test(p) ? [p] : [];
  });
}

/** `npx flakehouse CMD [SUB]`, or `flakehouse CMD` opening a code span or string: what a reader would type. */
function mentionedCommands(text: string): { command: string; sub: string | undefined; text: string }[] {
  const out: { command: string; sub: string | undefined; text: string }[] = [];
  for (const m of text.matchAll(/(?:\bnpx\s+|(?<=[>`'"]))flakehouse\s+([a-z][\w-]*)(?:[ \t]+([a-z][\w-]*))?/g)) {
    out.push({ command: m[1]!, sub: m[2], text: m[0] });
  }
  return out;
}

interface UsageCommand {
  /** Literal subcommands the usage lists (`project create`, `dead list | show ID`). */
  subs: Set<string>;
  /** Some usage line takes options or arguments right after the command (`report [--strict] FILES`). */
  takesArgs: boolean;
}

/** The commands of `flakehouse help`: each line indented by two spaces that names one. */
function usageCommands(usage: string): Map<string, UsageCommand> {
  const commands = new Map<string, UsageCommand>();
  for (const line of usage.split('\n')) {
    const m = /^ {2}([a-z][\w-]*)( .*)?$/.exec(line);
    if (!m) continue;
    const c = commands.get(m[1]!) ?? { subs: new Set<string>(), takesArgs: false };
    commands.set(m[1]!, c);
    const rest = m[2] ?? '';
    const sub = /^ ([a-z][\w-]*)\b/.exec(rest);
    if (sub) c.subs.add(sub[1]!);
    else c.takesArgs = true;
    for (const alt of rest.matchAll(/\|\s*([a-z][\w-]*)\b/g)) c.subs.add(alt[1]!);
  }
  return commands;
}

async function usage(): Promise<string> {
  let text = '';
  const stdout = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString('utf8');
      cb();
    },
  });
  const code = await main(['help'], { PATH: process.env.PATH ?? '' }, ROOT, { stdin: Readable.from([]), stdout, stderr: stdout });
  expect(code).toBe(0);
  return text;
}

function knows(commands: Map<string, UsageCommand>, mention: { command: string; sub: string | undefined }): boolean {
  const c = commands.get(mention.command);
  if (!c) return false;
  if (c.takesArgs) return true;
  return mention.sub !== undefined && c.subs.has(mention.sub);
}

describe('CLI commands named by the dashboard', () => {
  it('parses the usage and the mentions as meant', async () => {
    const commands = usageCommands(await usage());
    expect(commands.get('project')).toEqual({ subs: new Set(['create']), takesArgs: false });
    expect(commands.get('dead')?.subs).toEqual(new Set(['list', 'show', 'requeue', 'drop']));
    expect(commands.get('report')?.takesArgs).toBe(true);
    expect(mentionedCommands("<code>npx flakehouse project settings</code> and `flakehouse token create --project x` but not x-flakehouse-project or the flakehouse server")).toEqual([
      { command: 'project', sub: 'settings', text: 'npx flakehouse project settings' },
      { command: 'token', sub: 'create', text: 'flakehouse token create' },
    ]);
    expect(knows(commands, { command: 'project', sub: 'settings' })).toBe(false);
    expect(knows(commands, { command: 'project', sub: 'create' })).toBe(true);
    expect(knows(commands, { command: 'report', sub: undefined })).toBe(true);
    expect(knows(commands, { command: 'nope', sub: undefined })).toBe(false);
  });

  it('every command web/src tells a user to run is in the CLI usage', async () => {
    const commands = usageCommands(await usage());
    const mentions = webSources(path.join(ROOT, 'web/src')).flatMap((f) =>
      mentionedCommands(readFileSync(f, 'utf8')).map((m) => ({ ...m, file: path.relative(ROOT, f) })),
    );
    // The sign-in hint (project create), the empty runs page (report) and the settings page (report).
    expect(mentions.length).toBeGreaterThanOrEqual(3);
    const unknown = mentions.filter((m) => !knows(commands, m)).map((m) => `${m.file}: ${m.text}`);
    expect(unknown).toEqual([]);
  });
});
