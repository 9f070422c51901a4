// Projects and API tokens. Tokens are `fh_` + 48 hex chars, shown once; only the SHA-256 is kept.
import { randomBytes, randomUUID } from 'node:crypto';
import { sha256Hex } from '../../client/src/contract/ids.js';
import { toNumber, type Store } from './client.js';
import { requestRead } from './request-read.js';

import type { Scope } from '../../client/src/contract/tokens.js';
export { SCOPES, type Scope } from '../../client/src/contract/tokens.js';

export interface Project {
  id: string;
  slug: string;
  name: string;
  badgeToken: string;
  createdAt: string;
}

export interface TokenPrincipal {
  tokenId: string;
  projectId: string;
  scopes: Scope[];
}

export const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function generateToken(): string {
  return `fh_${randomBytes(24).toString('hex')}`;
}

export { TOKEN_RE } from '../../client/src/contract/tokens.js';

/** Badge tokens are public, read-only capabilities for one project's badges: kept as-is (the CLI
 * prints the snippet again later), 128 random bits so they cannot be guessed. */
export function generateBadgeToken(): string {
  return randomBytes(16).toString('hex');
}

export const BADGE_TOKEN_RE = /^[0-9a-f]{32}$/;

const CREATED = `toUnixTimestamp64Milli(created_at) AS created_at`;

interface ProjectRow {
  id: string;
  slug: string;
  name: string;
  badge_token: string;
  created_at: number | string;
}

function toProject(r: ProjectRow): Project {
  return { id: r.id, slug: r.slug, name: r.name, badgeToken: r.badge_token, createdAt: new Date(toNumber(r.created_at)).toISOString() };
}

export class ProjectRepo {
  /** Told after a token is created or revoked here (the token snapshot for ingest processes republishes). */
  private readonly tokenListeners = new Set<() => void>();

  constructor(private readonly store: Store) {}

  /** Calls `listener` after every token created or revoked through this repository; returns the unsubscribe. */
  onTokensChanged(listener: () => void): () => void {
    this.tokenListeners.add(listener);
    return () => this.tokenListeners.delete(listener);
  }

  private tokensChanged(): void {
    for (const l of this.tokenListeners) l();
  }

  async list(): Promise<Project[]> {
    const rows = await this.store.query<ProjectRow>(
      `SELECT id, slug, name, badge_token, ${CREATED} FROM ${this.store.table('projects')} FINAL WHERE deleted = 0 ORDER BY created_at`,
    );
    return rows.map(toProject);
  }

  async bySlug(slug: string): Promise<Project | null> {
    const rows = await this.store.query<ProjectRow>(
      `SELECT id, slug, name, badge_token, ${CREATED} FROM ${this.store.table('projects')} FINAL WHERE slug = {slug:String} AND deleted = 0 LIMIT 1`,
      { slug },
    );
    return rows[0] ? toProject(rows[0]) : null;
  }

  async create(slug: string, name?: string): Promise<Project> {
    const now = Date.now();
    const project = {
      id: randomUUID(),
      slug,
      name: name ?? slug,
      badge_token: generateBadgeToken(),
      created_at: now,
      version: now,
      deleted: 0,
    };
    await this.store.insert('projects', [project], `project:${project.id}`);
    return toProject(project);
  }

  async byId(id: string): Promise<Project | null> {
    const rows = await this.store.query<ProjectRow>(
      `SELECT id, slug, name, badge_token, ${CREATED} FROM ${this.store.table('projects')} FINAL WHERE id = {id:UUID} AND deleted = 0 LIMIT 1`,
      { id },
    );
    return rows[0] ? toProject(rows[0]) : null;
  }

  async byBadgeToken(badgeToken: string): Promise<Project | null> {
    const rows = await this.store.query<ProjectRow>(
      `SELECT id, slug, name, badge_token, ${CREATED} FROM ${this.store.table('projects')} FINAL WHERE badge_token = {badgeToken:String} AND deleted = 0 LIMIT 1`,
      { badgeToken },
    );
    return rows[0] ? toProject(rows[0]) : null;
  }

  /** A new badge token for the project; the old one stops working at once. Null when no such project. */
  async rotateBadgeToken(slug: string): Promise<Project | null> {
    const rows = await this.store.query<ProjectRow & { version: number | string }>(
      `SELECT id, slug, name, badge_token, ${CREATED}, version FROM ${this.store.table('projects')} FINAL WHERE slug = {slug:String} AND deleted = 0 LIMIT 1`,
      { slug },
    );
    const row = rows[0];
    if (!row) return null;
    // A newer version than the row's, also if the clock stepped back since it was written.
    const version = Math.max(Date.now(), toNumber(row.version) + 1);
    const next = { ...row, created_at: toNumber(row.created_at), badge_token: generateBadgeToken(), version, deleted: 0 };
    await this.store.insert('projects', [next], `project-badge:${row.id}:${version}`);
    return toProject(next);
  }

  async createToken(projectId: string, scopes: Scope[]): Promise<{ id: string; token: string; scopes: Scope[] }> {
    const token = generateToken();
    const id = randomUUID();
    const now = Date.now();
    await this.store.insert(
      'tokens',
      [{ id, project_id: projectId, token_hash: sha256Hex(token), prefix: token.slice(0, 10), scopes, created_at: now, revoked_at: null, version: now }],
      `token:${id}`,
    );
    this.tokensChanged();
    return { id, token, scopes };
  }

  /** Returns false when no live token has that id. */
  async revokeToken(id: string): Promise<boolean> {
    const rows = await this.store.query<{ id: string; project_id: string; token_hash: string; prefix: string; scopes: Scope[]; created_at: number }>(
      `SELECT id, project_id, token_hash, prefix, scopes, toUnixTimestamp64Milli(created_at) AS created_at FROM ${this.store.table('tokens')} FINAL WHERE id = {id:UUID} AND revoked_at IS NULL`,
      { id },
    );
    const row = rows[0];
    if (!row) return false;
    const now = Date.now();
    await this.store.insert(
      'tokens',
      [{ ...row, created_at: toNumber(row.created_at), revoked_at: now, version: now }],
      `token-revoke:${id}:${now}`,
    );
    this.tokensChanged();
    return true;
  }

  /** A project's tokens (revoked ones too), newest first: what the dashboard's token list shows; never the secret. */
  async listTokens(projectId: string): Promise<{ id: string; prefix: string; scopes: Scope[]; createdAt: string; revokedAt: string | null }[]> {
    const rows = await this.store.query<{ id: string; prefix: string; scopes: Scope[]; created_ms: number | string; revoked_ms: number | string | null }>(
      `SELECT id, prefix, scopes, toUnixTimestamp64Milli(created_at) AS created_ms, toUnixTimestamp64Milli(revoked_at) AS revoked_ms
       FROM ${this.store.table('tokens')} FINAL WHERE project_id = {projectId:UUID} ORDER BY created_at DESC, id`,
      { projectId },
    );
    return rows.map((r) => ({
      id: r.id,
      prefix: r.prefix,
      scopes: r.scopes,
      createdAt: new Date(toNumber(r.created_ms)).toISOString(),
      revokedAt: r.revoked_ms === null ? null : new Date(toNumber(r.revoked_ms)).toISOString(),
    }));
  }

  async principalByHash(hash: string): Promise<(TokenPrincipal & { revoked: boolean }) | null> {
    // Every request's token check (until cached): a request's read, not queued behind the pipeline's.
    const rows = await requestRead<{ id: string; project_id: string; scopes: Scope[]; revoked: number }>(
      this.store,
      `SELECT id, project_id, scopes, revoked_at IS NOT NULL AS revoked FROM ${this.store.table('tokens')} FINAL WHERE token_hash = {hash:String} LIMIT 1`,
      { hash },
    );
    const r = rows[0];
    if (!r) return null;
    return { tokenId: r.id, projectId: r.project_id, scopes: r.scopes, revoked: Boolean(Number(r.revoked)) };
  }

  /** Every live (unrevoked) token by its SHA-256: what the token snapshot publishes for ingest processes. */
  async livePrincipals(): Promise<{ hash: string; principal: TokenPrincipal }[]> {
    const rows = await this.store.query<{ id: string; project_id: string; token_hash: string; scopes: Scope[] }>(
      `SELECT id, project_id, token_hash, scopes FROM ${this.store.table('tokens')} FINAL WHERE revoked_at IS NULL ORDER BY id`,
    );
    return rows.map((r) => ({ hash: r.token_hash, principal: { tokenId: r.id, projectId: r.project_id, scopes: r.scopes } }));
  }
}
