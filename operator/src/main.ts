/**
 * The image's entry point: `main.ts gateway`, `main.ts controller` or `main.ts migrate` (the chart's
 * two Deployments and its migrate Job pass the program as `args`). Each program wires its own parts
 * (programs/gateway.ts, programs/controller.ts, cli/migrate-command.ts); nothing else does.
 * Exit codes: 0 after SIGTERM/SIGINT or `--help` (which prints the variables), 1 on losing the Lease or a
 * fatal error, 2 on a bad configuration or an unknown program.
 */
import { USAGE } from "./config.ts";

const [program, ...args] = process.argv.slice(2);
if (program === "migrate") {
  const { runMigrate } = await import("./cli/migrate-command.ts");
  process.exit(
    await runMigrate(args, process.env, {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    }),
  );
}
const PROGRAMS = ["gateway", "controller"];
if (
  program === "--help" ||
  (program !== undefined && PROGRAMS.includes(program) && args.includes("--help"))
) {
  process.stdout.write(USAGE);
  process.exit(0);
}
// The programs take no arguments: a stray one is a mistake, not something to ignore.
const stray = args.filter((arg) => arg !== "--help");
if (program !== undefined && PROGRAMS.includes(program) && stray.length > 0) {
  process.stderr.write(
    `${program} takes no arguments (got ${stray.join(" ")}): it is configured by environment variables (\`main.ts --help\`)\n`,
  );
  process.exit(2);
}
if (program === "gateway") {
  const { runGateway } = await import("./programs/gateway.ts");
  await runGateway();
} else if (program === "controller") {
  const { runController } = await import("./programs/controller.ts");
  await runController();
} else {
  process.stderr.write(
    `${program === undefined ? "no program given" : `unknown program ${JSON.stringify(program)}`}: ` +
      "run `main.ts gateway`, `main.ts controller` or `main.ts migrate` (`main.ts --help` lists the variables)\n",
  );
  process.exit(2);
}
