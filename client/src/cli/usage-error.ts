/** A command line the CLI cannot run as given: `flakehouse` prints the message and exits 2. */
export class UsageError extends Error {}

/**
 * What the client package answers for what only the server does (`serve`, `validate`, reading
 * storage): the server's CLI (src/main/cli.ts) adds those, this package has none of them.
 */
export function needsServer(what: string): string {
  return `this needs the Flakehouse server (${what}), which the client package \`flakehouse\` leaves out: run it where the server is installed (a checkout of the repository with \`npm ci\`, or the Docker image)`;
}
