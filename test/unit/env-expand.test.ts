import { describe, expect, it } from 'vitest';
import { expandEnv, type ExpandProblem } from '../../src/pipeline/env-expand.js';

function expand(value: unknown, env: NodeJS.ProcessEnv): { value: unknown; problems: ExpandProblem[] } {
  const problems: ExpandProblem[] = [];
  return { value: expandEnv(value, env, problems), problems };
}

describe('expandEnv', () => {
  it('splices references into text and walks maps and lists, keys untouched', () => {
    const { value, problems } = expand({ '${env:K}': { url: 'https://${env:HOST}:${env:PORT:-443}/x', list: ['a-${env:HOST}'] } }, { HOST: 'h', K: 'no' });
    expect(problems).toEqual([]);
    expect(value).toEqual({ '${env:K}': { url: 'https://h:443/x', list: ['a-h'] } });
  });

  it('a whole-value reference keeps a number or boolean type; other text stays text', () => {
    const { value } = expand({ n: '${env:N}', b: '${env:B}', s: '${env:S}', z: '${env:Z}' }, { N: '4', B: 'true', S: 'basic', Z: '007x' });
    expect(value).toEqual({ n: 4, b: true, s: 'basic', z: '007x' });
  });

  it('$${ is a literal ${', () => {
    expect(expand({ a: '$${env:X}' }, {}).value).toEqual({ a: '${env:X}' });
  });

  it('an unset variable without default is a problem at its path; set-but-empty is the empty string', () => {
    const { problems } = expand({ exporters: { notify: { list: ['ok', '${env:MISSING}'] } } }, {});
    expect(problems).toEqual([{ path: 'exporters.notify.list.1', message: expect.stringContaining('environment variable MISSING is not set') as string }]);
    expect(expand({ a: 'x${env:E}y' }, { E: '' })).toEqual({ value: { a: 'xy' }, problems: [] });
  });

  it('a malformed name is a problem', () => {
    expect(expand({ a: '${env:NO SPACE}' }, {}).problems[0]?.path).toBe('a');
  });

  it('other ${…} text is left alone', () => {
    expect(expand({ a: '${HOME}' }, { HOME: '/root' }).value).toEqual({ a: '${HOME}' });
  });
});
