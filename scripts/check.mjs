// Type-check and lint in one process on one TypeScript program per tsconfig (npm test runs it).
// `tsc --noEmit` and typed lint rules each build the same program, and building it (reading,
// parsing, binding some 2,400 files, then checking them) is most of what either costs on a clean
// clone: sharing it cuts the two from about 90 CPU-seconds to about half (docs/architecture.md,
// Testing). `npm run typecheck` and `npm run lint` stay as they are, for running one of them.
//
// The programs are incremental (node_modules/.cache/tsc, as `npm run typecheck` keeps them) and
// ESLint's cache is the CLI's, so a second run re-checks and re-lints only what changed.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = path.join(ROOT, 'node_modules/.cache');
/** The tsconfigs `npm run typecheck` checks, with the build info file each keeps. */
const PROJECTS = [
  { config: 'tsconfig.json', buildInfo: 'tsc/main.tsbuildinfo' },
  // The dashboard imports the server's router type, which pulls src/ into this program. The root
  // program checks src/ (with Node's settings); here only web/'s own files are checked, as a
  // project reference to the server would: 10-11 instead of 17-19 CPU-seconds of checking, the
  // linting of web/ unchanged (three alternating runs). `npm run typecheck` checks all of it.
  { config: 'web/tsconfig.json', buildInfo: 'tsc/web.tsbuildinfo', checkOnly: 'web/' },
];
/** eslint.config.js lints with these programs when set (instead of starting its project service). */
const SHARED_PROGRAMS = Symbol.for('flakehouse.tsPrograms');

function check(project) {
  const configPath = path.join(ROOT, project.config);
  const configDiagnostics = [];
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => configDiagnostics.push(d),
  });
  if (!parsed) return { program: undefined, diagnostics: configDiagnostics };
  const options = { ...parsed.options, incremental: true, tsBuildInfoFile: path.join(CACHE, project.buildInfo) };
  const builder = ts.createIncrementalProgram({
    rootNames: parsed.fileNames,
    options,
    projectReferences: parsed.projectReferences,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed),
    host: ts.createIncrementalCompilerHost(options),
  });
  const program = builder.getProgram();
  const owned = project.checkOnly === undefined ? undefined : path.join(ROOT, project.checkOnly);
  const perFile = (get) =>
    owned === undefined
      ? get(undefined)
      : program
          .getSourceFiles()
          .filter((f) => !f.isDeclarationFile && path.resolve(f.fileName).startsWith(owned))
          .flatMap((f) => get(f));
  const diagnostics = [
    ...builder.getConfigFileParsingDiagnostics(),
    ...builder.getOptionsDiagnostics(),
    ...builder.getGlobalDiagnostics(),
    ...perFile((f) => builder.getSyntacticDiagnostics(f)),
    ...perFile((f) => builder.getSemanticDiagnostics(f)),
  ];
  // With noEmit this writes the build info only, as `tsc --noEmit --incremental` does.
  builder.emit();
  return { program, diagnostics };
}

const started = performance.now();
const checked = PROJECTS.map(check);
// A web/ file the server imports is in both programs: its errors are reported once.
const typeErrors = [
  ...new Map(checked.flatMap((c) => c.diagnostics).map((d) => [`${d.file?.fileName}:${d.start}:${d.code}:${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`, d])).values(),
];
if (typeErrors.length > 0) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
  // As tsc: with colour and context on a terminal, one line per error otherwise.
  const pretty = process.stdout.isTTY || process.env.FORCE_COLOR;
  process.stdout.write(pretty ? ts.formatDiagnosticsWithColorAndContext(typeErrors, host) : ts.formatDiagnostics(typeErrors, host));
}
const checkedAt = performance.now();
if (checked.some((c) => !c.program)) {
  // A tsconfig that does not load leaves nothing to lint with.
  process.exitCode = 1;
  process.exit();
}

// ESLint's cache keys results by a hash of the config: a program hashes as its tsconfig's name,
// as `projectService: true` does for the CLI.
globalThis[SHARED_PROGRAMS] = Object.fromEntries(
  PROJECTS.map((p, i) => [p.config, Object.assign(checked[i].program ? [checked[i].program] : [], { toJSON: () => p.config })]),
);
const eslint = new ESLint({
  cwd: ROOT,
  cache: true,
  cacheStrategy: 'content',
  cacheLocation: path.join(CACHE, 'eslint/'),
});
const results = await eslint.lintFiles(['.']);
const formatter = await eslint.loadFormatter('stylish');
const report = await formatter.format(results);
if (report) process.stdout.write(report);
const lintErrors = results.reduce((n, r) => n + r.errorCount + r.fatalErrorCount, 0);

const secs = (ms) => (ms / 1000).toFixed(1);
process.stdout.write(
  `check: ${typeErrors.length} type error(s) in ${secs(checkedAt - started)} s, ${lintErrors} lint error(s) in ${results.length} files in ${secs(performance.now() - checkedAt)} s\n`,
);
process.exitCode = typeErrors.length > 0 || lintErrors > 0 ? 1 : 0;
