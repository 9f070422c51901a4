// What a reader (a token with `read`, a project session) is shown of a notification channel's
// target. A webhook URL often is a credential, in part or whole: a userinfo (`https://u:pw@…`), a
// query parameter (`?token=…`, `?sig=…`), or a random path segment (Slack's
// `/services/T…/B…/<secret>`, Discord's `/api/webhooks/<id>/<token>`). Anyone holding one can post
// to the channel, so reading the project must not hand it out. Only the admin, who writes the
// project's settings, sees targets whole (GET /v1/admin/projects/:slug/settings). Email addresses
// are not credentials and stay whole.
import { isCredentialName, REDACTED } from './log-redaction.js';

/**
 * A value that looks generated rather than named: no blanks, mostly URL-safe characters, and long
 * (32+), or 16+ with letters and digits mixed (`T0123ABCD/B0456EFGH/XXXXXXXX…`). Ordinary path
 * words (`flaky`, `services`, `hooks`) are neither.
 */
export function looksSecret(value: string): boolean {
  if (!/^[A-Za-z0-9._~+/=%-]+$/.test(value)) return false;
  if (value.length >= 32) return true;
  return value.length >= 16 && /[A-Za-z]/.test(value) && /\d/.test(value);
}

function decoded(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/**
 * The target with its userinfo, credential-named or secret-looking query values, secret-looking
 * path segments and fragment replaced by `[redacted]`; scheme, host, port and ordinary path words
 * kept, so a reader can still tell which service and endpoint a channel posts to.
 */
export function redactWebhookTarget(target: string): string {
  if (!URL.canParse(target)) return REDACTED;
  const url = new URL(target);
  const userinfo = url.username !== '' || url.password !== '' ? `${REDACTED}@` : '';
  const pathname = url.pathname
    .split('/')
    .map((seg) => (seg !== '' && looksSecret(decoded(seg)) ? REDACTED : seg))
    .join('/');
  let search = '';
  if (url.search !== '') {
    const pairs = url.search
      .slice(1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq < 0 ? pair : pair.slice(0, eq);
        const value = eq < 0 ? '' : pair.slice(eq + 1);
        if (value === '') return eq < 0 && looksSecret(decoded(name)) ? REDACTED : pair;
        return isCredentialName(decoded(name)) || looksSecret(decoded(value)) ? `${name}=${REDACTED}` : pair;
      });
    search = `?${pairs.join('&')}`;
  }
  const hash = url.hash !== '' && url.hash !== '#' ? `#${REDACTED}` : '';
  return `${url.protocol}//${userinfo}${url.host}${pathname}${search}${hash}`;
}

/** A channel's target as a reader sees it: an email address whole, a URL redacted. */
export function readerChannelTarget(kind: string, target: string): string {
  return kind === 'email' ? target : redactWebhookTarget(target);
}
