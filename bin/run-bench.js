#!/usr/bin/env node
// `npm run bench -- <name>`: runs bench/<name>.ts through tsx.
import { register } from 'tsx/esm/api';

register();
const name = process.argv[2];
if (!name) {
  console.error('usage: npm run bench -- <agent-rss|cli-start|clustering|dashboard|detection|door|durability|export|grpc-hostile|identity-cold|identity-stitch|ingest|junit-large|nats-chaos|otlp-grpc|reporter-overhead|scale|scale-out|split|sql|suite> [options]');
  process.exit(2);
}
const mod = await import(`../bench/${name}.ts`);
process.exitCode = await mod.run(process.argv.slice(3));
