// The NATS JetStream queue backend (see queue.ts).
export { NatsQueue, type NatsQueueOptions } from './queue.js';
export { natsNames, type NatsNames } from './names.js';
export { receiptIdFor } from './ids.js';
