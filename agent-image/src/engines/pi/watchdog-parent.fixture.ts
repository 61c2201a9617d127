/**
 * A stand-in agent process for the watchdog test: starts Pi through a PiHost in `argv[2]` (no model is
 * asked), prints Pi's pid, and waits to be killed.
 */
import { loadEmptySession, offlineHost } from "./offline-host.ts";

const host = offlineHost(process.argv[2]!);
await loadEmptySession(host);
process.stdout.write(`${host.pid}\n`);
setInterval(() => {}, 60_000);
