// Sign-in: paste a token; the daemon exchanges it for a session cookie (HttpOnly) and the token is
// forgotten by the page at once: never put in storage, never in the URL.
import { useState } from 'preact/hooks';
import { asFailure, signIn, type ApiFailure, type Session } from '../api.js';
import { safeNext } from '../lib/url.js';
import { navigate, type Location } from '../router.js';
import { ErrorView, PageTitle } from '../ui/states.js';

export function SignInPage({ loc, session, onSignedIn }: { loc: Location; session: Session | null; onSignedIn: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const next = safeNext(loc.query.get('next'));

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await signIn(token.trim());
      setToken('');
      onSignedIn(s);
      navigate(next, { replace: true });
    } catch (err) {
      setError(asFailure(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="signin">
      <PageTitle title="Sign in">Paste a Flakehouse token to open the dashboard.</PageTitle>
      {session ? (
        <p>
          You are signed in ({session.principal.kind === 'admin' ? 'admin' : `project ${session.principal.projectSlug ?? ''}`}). <a href={next}>Continue</a>
        </p>
      ) : null}
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">
          Token
          <input
            id="token"
            name="token"
            type="password"
            autoComplete="off"
            spellcheck={false}
            required
            placeholder="fh_…"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
            aria-describedby="token-help"
            aria-invalid={error ? true : undefined}
          />
        </label>
        <small id="token-help">
            A project token with the <code>read</code> scope to look, <code>quarantine</code> to quarantine tests; the admin token (<code>data/admin-token</code>) for settings,
            tokens, the pipeline and every project. The first start prints a project token and saves it to <code>data/bootstrap-token</code>.
        </small>
        {error ? <ErrorView error={error} /> : null}
        <button type="submit" aria-busy={busy} disabled={busy || token.trim() === ''}>
          Sign in
        </button>
      </form>
      <p class="muted">The token is exchanged for a session cookie (HttpOnly, SameSite=Strict); the browser does not keep the token.</p>
    </section>
  );
}
