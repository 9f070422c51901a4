// Settings: policy keys with their source (env-set keys read-only), notification channels with
// "send test", tokens (create, shown once; revoke), badge snippets and the data export.
import { useState } from 'preact/hooks';
import { api, asFailure, type ApiFailure, type Outputs } from '../api.js';
import { patchFor } from '../lib/settings.js';
import type { PageProps } from '../app.js';
import { isAdmin, useSession } from '../session.js';
import { CopyButton } from '../ui/copy.js';
import { ReasonDialog } from '../ui/dialog.js';
import { when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, ErrorView, PageTitle, TableScroll } from '../ui/states.js';
import { HeadRow } from '../ui/table.js';

export function SettingsPage({ params }: PageProps) {
  const slug = params.slug!;
  const { session } = useSession();
  const admin = isAdmin(session);
  return (
    <>
      <PageTitle title="Settings">
        Project <code>{slug}</code>
        {admin ? '' : ' — sign in with the admin token to change settings, channels and tokens.'}
      </PageTitle>
      <nav class="tabs" aria-label="Settings sections">
        <a href="#policy">Policy</a>
        <a href="#notifications">Notifications</a>
        {admin ? <a href="#tokens">Tokens</a> : null}
        <a href="#badges">Badges</a>
        <a href="#export">Export</a>
      </nav>
      <Policy slug={slug} admin={admin} />
      <Channels slug={slug} admin={admin} />
      {admin ? <Tokens slug={slug} /> : null}
      <Badges slug={slug} />
      <Export slug={slug} admin={admin} />
    </>
  );
}

type SettingsView = Outputs['settings']['get'];
type PolicyKey = SettingsView['keys'][number];

function show(v: unknown): string {
  if (v === undefined || v === null) return '–';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function Policy({ slug, admin }: { slug: string; admin: boolean }) {
  const q = useQuery(() => api(slug).settings.get.query(), [slug]);
  const [editing, setEditing] = useState<PolicyKey | null>(null);
  return (
    <section id="policy" aria-labelledby="policy-h">
      <h2 id="policy-h">Policy</h2>
      <p class="muted">
        Each key's value and where it comes from: <code>default</code>, <code>file</code> (service.yml), <code>settings</code> (set here) or <code>env</code> (an environment
        variable: read-only here, change it where the daemon runs).
      </p>
      <Async q={q} what="the policy">
        {(s) => (
          <TableScroll label="Policy keys">
            <table class="striped policy">
              <HeadRow cols={['Key', 'Value', 'Source', admin ? 'Change' : null]} />
              <tbody>
                {s.keys.map((k) => (
                  <tr key={k.key}>
                    <td>
                      <code>{k.key}</code>
                    </td>
                    <td>
                      <code>{show(k.value)}</code>
                      {k.note ? (
                        <small class="muted">
                          {' '}
                          (configured <code>{show(k.configured)}</code>; {k.note})
                        </small>
                      ) : null}
                    </td>
                    <td>
                      <span class={`pill${k.readOnly ? ' readonly' : ''}`}>{k.source}</span>
                      {k.readOnly ? <small class="muted"> read-only</small> : null}
                    </td>
                    {admin ? (
                      <td>
                        {k.readOnly ? (
                          <small class="muted">set by the environment</small>
                        ) : (
                          <button type="button" class="small outline" aria-label={`Change ${k.key}`} onClick={() => setEditing(k)}>
                            Change
                          </button>
                        )}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        )}
      </Async>
      {editing ? (
        <ReasonDialog
          title={`Change ${editing.key}`}
          description={`Current value: ${show(editing.value)} (from ${editing.source}). Type the new value as JSON (a number, true/false, "a string", [a list]); empty clears the setting so the key inherits again.`}
          reasonLabel="New value (JSON)"
          confirmLabel="Save"
          onConfirm={async (raw) => {
            let value: unknown = null;
            if (raw !== '') {
              try {
                value = JSON.parse(raw);
              } catch {
                value = raw; // a bare word is a string
              }
            }
            await api(slug).settings.update.mutate({ patch: patchFor(editing.key, value) });
            q.reload();
          }}
          onClose={() => setEditing(null)}
        />
      ) : null}
    </section>
  );
}

function Channels({ slug, admin }: { slug: string; admin: boolean }) {
  const q = useQuery(() => api(slug).channels.list.query(), [slug]);
  const [result, setResult] = useState<Record<string, string>>({});
  const [error, setError] = useState<ApiFailure | null>(null);
  const sendTest = async (channelId: string) => {
    setError(null);
    setResult((r) => ({ ...r, [channelId]: 'sending…' }));
    try {
      const out = await api(slug).channels.sendTest.mutate({ channelId });
      setResult((r) => ({ ...r, [channelId]: out.delivered ? `delivered: ${out.detail}` : `not delivered: ${out.detail}` }));
    } catch (e) {
      setResult((r) => ({ ...r, [channelId]: 'failed' }));
      setError(asFailure(e));
    }
  };
  return (
    <section id="notifications" aria-labelledby="notifications-h">
      <h2 id="notifications-h">Notifications</h2>
      <Async q={q} what="notification channels">
        {(data) =>
          data.items.length === 0 ? (
            <p>
              No channel yet. Add Slack, webhook or email channels under <code>notifications.channels</code> in service.yml (the next{' '}
              <code>npx flakehouse report</code> syncs them), or as the project setting <code>notifications.channels</code> through the admin API:{' '}
              <code>PATCH /v1/admin/projects/{slug}/settings</code> (docs/configuration.md).
            </p>
          ) : (
            <TableScroll label="Notification channels">
              <table class="striped">
                <HeadRow cols={['Channel', 'Target', 'Events', 'Source', admin ? 'Test' : null]} />
                <tbody>
                  {data.items.map((c) => (
                    <tr key={c.id}>
                      <td>
                        <code>{c.id}</code> <small class="muted">{c.kind}</small>
                      </td>
                      <td>
                        <code>{c.target}</code>
                      </td>
                      <td>{c.events.join(', ')}</td>
                      <td>
                        <span class={`pill${c.readOnly ? ' readonly' : ''}`}>{c.source}</span>
                      </td>
                      {admin ? (
                        <td class="nowrap">
                          <button type="button" class="small outline" aria-label={`Send a test to ${c.id}`} onClick={() => void sendTest(c.id)}>
                            Send test
                          </button>{' '}
                          <span role="status">{result[c.id] ?? ''}</span>
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )
        }
      </Async>
      {error ? <ErrorView error={error} /> : null}
    </section>
  );
}

const TOKEN_SCOPES = ['ingest', 'read', 'quarantine', 'sql'] as const;

function Tokens({ slug }: { slug: string }) {
  const q = useQuery(() => api(slug).tokens.list.query(), [slug]);
  const [created, setCreated] = useState<{ token: string; scopes: string[] } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [revoking, setRevoking] = useState<{ id: string; prefix: string } | null>(null);
  const create = async (form: HTMLFormElement) => {
    const f = new FormData(form);
    const scopes = TOKEN_SCOPES.filter((s) => f.get(`scope-${s}`) === 'on');
    setBusy(true);
    setError(null);
    try {
      const out = await api(slug).tokens.create.mutate({ scopes });
      setCreated({ token: out.token, scopes: out.scopes });
      form.reset();
      q.reload();
    } catch (e) {
      setError(asFailure(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section id="tokens" aria-labelledby="tokens-h">
      <h2 id="tokens-h">Tokens</h2>
      {created ? (
        <article aria-labelledby="new-token-h">
          <h3 id="new-token-h">New token ({created.scopes.join(', ')})</h3>
          <p>Copy it now: it is shown only once. Store it in your CI's secrets as SERVICE_TOKEN.</p>
          <p class="secret">
            <code data-testid="new-token">{created.token}</code> <CopyButton text={created.token} label="Copy token" />
          </p>
          <button type="button" class="small secondary" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </article>
      ) : null}
      <Async q={q} what="tokens">
        {(data) => (
          <TableScroll label="Token list">
            <table class="striped">
              <HeadRow cols={['Token', 'Scopes', 'Created', 'State', 'Revoke']} />
              <tbody>
                {data.items.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <code>{t.prefix}…</code>
                    </td>
                    <td>{t.scopes.length ? t.scopes.join(', ') : 'ingest'}</td>
                    <td class="nowrap">{when(t.createdAt)}</td>
                    <td>{t.revokedAt ? `revoked ${when(t.revokedAt)}` : 'active'}</td>
                    <td>
                      {t.revokedAt ? null : (
                        <button type="button" class="small outline" aria-label={`Revoke ${t.prefix}`} onClick={() => setRevoking({ id: t.id, prefix: t.prefix })}>
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        )}
      </Async>
      <form
        aria-labelledby="create-token-h"
        onSubmit={(e) => {
          e.preventDefault();
          void create(e.currentTarget);
        }}
      >
        <h3 id="create-token-h">Create a token</h3>
        <fieldset>
          <legend>Scopes</legend>
          {TOKEN_SCOPES.map((s) => (
            <label key={s}>
              <input type="checkbox" name={`scope-${s}`} defaultChecked={s === 'ingest'} /> {s}
            </label>
          ))}
        </fieldset>
        {error ? <ErrorView error={error} /> : null}
        <button type="submit" aria-busy={busy} disabled={busy}>
          Create token
        </button>
      </form>
      {revoking ? (
        <ReasonDialog
          title={`Revoke ${revoking.prefix}…`}
          description="Every request with this token is refused from now on, and dashboard sessions opened with it end."
          reasonLabel="Type the token's first characters to confirm"
          reasonRequired
          confirmLabel="Revoke"
          onConfirm={async (typed) => {
            if (typed !== revoking.prefix) throw new Error(`type “${revoking.prefix}” to confirm`);
            await api(slug).tokens.revoke.mutate({ tokenId: revoking.id });
            q.reload();
          }}
          onClose={() => setRevoking(null)}
        />
      ) : null}
    </section>
  );
}

function Badges({ slug }: { slug: string }) {
  const q = useQuery(() => api(slug).badges.get.query(), [slug]);
  return (
    <section id="badges" aria-labelledby="badges-h">
      <h2 id="badges-h">Badges</h2>
      <Async q={q} what="badges">
        {(b) => {
          const base = b.publicApiUrl ?? window.location.origin;
          return (
            <>
              <p class="muted">Markdown for a README; the badge URLs carry a badge token that shows only these numbers.</p>
              {b.badges.map((badge) => {
                const snippet = `![${badge.label}](${base}${badge.svg})`;
                return (
                  <div key={badge.variant}>
                    <h3>{badge.label}</h3>
                    <p>
                      <img src={badge.svg} alt={`${badge.label} badge`} />
                    </p>
                    <p class="secret">
                      <code>{snippet}</code> <CopyButton text={snippet} label={`Copy the ${badge.label} snippet`} />
                    </p>
                  </div>
                );
              })}
            </>
          );
        }}
      </Async>
    </section>
  );
}

function Export({ slug, admin }: { slug: string; admin: boolean }) {
  // A plain link (the browser downloads it with the session cookie); the admin names the project.
  const href = admin ? `/v1/export?project=${encodeURIComponent(slug)}` : '/v1/export';
  return (
    <section id="export" aria-labelledby="export-h">
      <h2 id="export-h">Data export</h2>
      <p>Every run, execution, score and the artifact inventory of this project as gzipped NDJSON (one export per project at a time).</p>
      <p>
        <a href={href} download role="button" class="secondary">
          Download the export
        </a>
      </p>
    </section>
  );
}
