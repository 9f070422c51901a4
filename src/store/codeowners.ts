// CODEOWNERS per project (PUT /v1/codeowners), parsed once per version and kept in memory.
import { ownersFor, parseCodeowners } from '../domain/codeowners.js';
import { toNumber, type Store } from './client.js';

type Rules = ReturnType<typeof parseCodeowners>['rules'];

export class CodeownersRepo {
  private readonly cache = new Map<string, { version: number; rules: Rules; checkedAt: number }>();

  constructor(
    private readonly store: Store,
    /** How long a cached parse is trusted before the version is checked again. */
    private readonly ttlMs = 5_000,
  ) {}

  async put(projectId: string, content: string): Promise<void> {
    const now = Date.now();
    await this.store.insert('codeowners', [{ project_id: projectId, content, updated_at: now, version: now }], `codeowners:${projectId}:${now}`);
    this.cache.set(projectId, { version: now, rules: parseCodeowners(content).rules, checkedAt: now });
  }

  async rules(projectId: string): Promise<Rules> {
    const hit = this.cache.get(projectId);
    const now = Date.now();
    if (hit && now - hit.checkedAt < this.ttlMs) return hit.rules;
    const rows = await this.store.query<{ version: number | string; content: string }>(
      `SELECT version, content FROM ${this.store.table('codeowners')} FINAL WHERE project_id = {projectId:UUID} LIMIT 1`,
      { projectId },
    );
    const version = toNumber(rows[0]?.version);
    const rules = hit && hit.version === version ? hit.rules : parseCodeowners(rows[0]?.content ?? '').rules;
    this.cache.set(projectId, { version, rules, checkedAt: now });
    return rules;
  }

  /** A resolver for many paths with one read. */
  async resolver(projectId: string): Promise<(filePath: string) => string[]> {
    const rules = await this.rules(projectId);
    return (filePath) => ownersFor(rules, filePath);
  }
}
