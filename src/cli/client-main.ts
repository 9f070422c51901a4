// The entry of the client package's `flakehouse` command (client/dist/cli.js, built by
// scripts/build-client.mjs). The commands are src/cli/main.ts's, so a command added there is in
// the client too; what only the server runs (`serve`, `validate`, the storage fallback of
// `config --project`) is left out of the bundle and answers that it needs the server.
import module from 'node:module';

// Node 22.1 and later keep the compiled code on disk (under the OS temp directory) for the next
// start, as TypeScript's own CLI does: most of a start is compiling the bundled packages. Before
// the commands load, so it covers them; Node 20 has no such cache and goes on without.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const { main } = await import('./main.js');
process.exitCode = await main(process.argv.slice(2));
