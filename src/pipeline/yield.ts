// Processors and exporters share an event loop with something that must not wait: on the pipeline
// thread (the default) its replies from the main thread's store and queue and its pause/shutdown
// messages; with SERVICE_PIPELINE_THREAD=false, the ingest API, whose every 202 would wait behind a
// long synchronous stretch. Hot loops call `tick()` and give the loop a turn every `every` units.
import { setImmediate as turn } from 'node:timers/promises';

export class Yielder {
  private count = 0;

  constructor(private readonly every = 1000) {}

  async tick(units = 1): Promise<void> {
    this.count += units;
    if (this.count >= this.every) {
      this.count = 0;
      await turn();
    }
  }
}
