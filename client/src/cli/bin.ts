// The entry of the client package's `flakehouse` command (client/dist/cli.js, built by
// scripts/build-client.mjs): client/src/cli/main.ts's commands with no server behind them, so what
// only the server runs (`serve`, `validate`, the storage fallback of `config --project`) answers
// that it needs the server. The server's own `flakehouse` is src/main/cli.ts.
import module from 'node:module';

// Node 22.1 and later keep the compiled code on disk (under the OS temp directory) for the next
// start, as TypeScript's own CLI does: most of a start is compiling the bundled packages. Before
// the commands load, so it covers them; Node 20 has no such cache and goes on without.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const { main } = await import('./main.js');
process.exitCode = await main(process.argv.slice(2));
