/**
 * The process's memory beyond prom-client's default metrics: `gatehouse_nodejs_array_buffers_bytes`,
 * the ArrayBuffers and Buffers part of `gatehouse_nodejs_external_memory_bytes` — apart, they tell
 * buffered I/O (response bodies, sockets) from native objects. Read by `make bench-scale`'s per-component
 * memory breakdown (test/bench/process-memory.ts) beside the heap's and RSS.
 */
import { Gauge, type Registry } from "prom-client";

/** Registers the gauge on `registry`. */
export function trackArrayBuffers(registry: Registry): void {
  new Gauge({
    name: "gatehouse_nodejs_array_buffers_bytes",
    help: "Memory of ArrayBuffers and Buffers (process.memoryUsage().arrayBuffers), part of nodejs_external_memory_bytes.",
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().arrayBuffers);
    },
  });
}
