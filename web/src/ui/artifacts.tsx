// Artifacts through their signed URLs: images and video inline, everything else (Playwright
// traces, HAR files, logs) as a download link.
import { num } from './format.js';

export interface ArtifactView {
  name: string;
  contentType: string;
  path: string;
  sizeBytes?: number | undefined;
  url: string | null;
}

/** An artifact as the read API lists it (some procedures type the list loosely as unknown[]). */
export function isArtifactView(a: unknown): a is ArtifactView {
  if (a === null || typeof a !== 'object') return false;
  const x = a as Record<string, unknown>;
  return typeof x.name === 'string' && typeof x.contentType === 'string' && typeof x.path === 'string' && (x.url === null || typeof x.url === 'string');
}

export function Artifacts({ items }: { items: ArtifactView[] }) {
  if (items.length === 0) return <p class="muted">No artifacts were uploaded for this execution.</p>;
  return (
    <div class="artifacts">
      {items.map((a) => (
        <figure key={a.path + a.name}>
          {a.url && a.contentType.startsWith('image/') ? <img src={a.url} alt={`Artifact ${a.name}`} loading="lazy" /> : null}
          {a.url && a.contentType.startsWith('video/') ? (
            <video src={a.url} controls preload="metadata" aria-label={`Artifact ${a.name}`}>
              <track kind="captions" />
            </video>
          ) : null}
          <figcaption>
            {a.url ? (
              <a href={a.url} download={a.name} rel="noreferrer">
                {a.name}
              </a>
            ) : (
              <span>
                {a.name} <small class="muted">(not stored: no download)</small>
              </span>
            )}{' '}
            <small class="muted">
              {a.contentType}
              {a.sizeBytes !== undefined ? ` · ${num(a.sizeBytes)} bytes` : ''}
            </small>
          </figcaption>
        </figure>
      ))}
    </div>
  );
}
