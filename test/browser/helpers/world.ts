// What a browser test file uses: the world global-setup.ts started (one daemon, one Chromium),
// REST calls to check the pages against, and signed-in pages that collect their own problems.
import { expect, inject } from 'vitest';
import type { Browser, BrowserContext } from 'playwright-core';
import type { BrowserWorld } from '../global-setup.js';
import { axeViolations, connectChromium, screenshot, signInContext, watchedPage, type WatchedPage } from './browser.js';

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

export function world(): BrowserWorld {
  return inject('world');
}

let connected: Promise<Browser> | undefined;
/** The suite's one Chromium, connected once per worker (files share the worker: isolate is off). */
export function browser(): Promise<Browser> {
  connected ??= connectChromium(world().wsEndpoint);
  return connected;
}

export interface RestAnswer {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

/** A REST call with a bearer token (the project's full token unless another is given). */
export async function rest(method: string, urlPath: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<RestAnswer> {
  const w = world();
  const res = await fetch(`${w.url}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${opts.token ?? w.token}`, ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

export async function restJson(urlPath: string, token?: string): Promise<any> {
  const res = await rest('GET', urlPath, { token });
  expect(res.status, `GET ${urlPath}: ${res.text}`).toBe(200);
  return res.json;
}

export interface SignedIn extends WatchedPage {
  csrfToken: string;
  close(): Promise<void>;
}

/** A fresh context (its own cookie jar) signed in with `token`, and a watched page in it. */
export async function signedIn(token: string = world().token, viewport = DESKTOP): Promise<SignedIn> {
  const context = await newContext(viewport);
  const { csrfToken } = await signInContext(context, world().url, token);
  const watched = await watchedPage(context);
  return { ...watched, csrfToken, close: () => context.close() };
}

export async function newContext(viewport = DESKTOP): Promise<BrowserContext> {
  const b = await browser();
  return b.newContext({ viewport, baseURL: world().url });
}

export function projectUrl(...parts: string[]): string {
  return `/projects/${world().projectSlug}/${parts.map(encodeURIComponent).join('/')}`;
}

/**
 * The checks every page gets once its content is in: no console error, uncaught exception or
 * failed request since it opened, no serious or critical axe violation; then its screenshot.
 */
export async function checkPage(p: WatchedPage, name: string): Promise<void> {
  // Anything still loading (a chart, a second query) finishes before the page is judged.
  await p.page.waitForLoadState('networkidle');
  const busy = p.page.locator('[aria-busy="true"]');
  await expect.poll(async () => (await busy.count()) === 0 ? [] : busy.evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim())), { timeout: 10_000 }).toEqual([]);
  const violations = await axeViolations(p.page);
  expect(violations, `${name}: axe serious/critical violations`).toEqual([]);
  await screenshot(p.page, name);
  expect(p.problems, `${name}: console errors, exceptions or failed requests`).toEqual([]);
}
