// The settings page's policy edits as the PATCH document, pure: tested in test/unit/dashboard-web.test.ts.
import type { Inputs } from '../api.js';

type SettingsPatch = Inputs['settings']['update']['patch'];

/** `flaky.threshold` = 0.7 as the nested patch the PATCH route takes (null clears the key). */
export function patchFor(key: string, value: unknown): SettingsPatch {
  const parts = key.split('.');
  let patch: unknown = value;
  for (let i = parts.length - 1; i >= 0; i--) patch = { [parts[i]!]: patch };
  return patch as SettingsPatch;
}
