/** A command line the CLI cannot run as given: `flakehouse` prints the message and exits 2. */
export class UsageError extends Error {}
