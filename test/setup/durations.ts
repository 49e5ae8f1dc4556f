/**
 * Writes test/setup/durations.json, the order vitest.config.ts starts files in on a machine with no run of its
 * own yet (CI's clean clone): `<project>:<path>` to milliseconds, from vitest JSON reports.
 *
 *   npx vitest run --reporter=json --outputFile=report.json
 *   npx tsx test/setup/durations.ts report.json [more reports...]
 *
 * A report of a run without projects (its files named without one) counts for the `sqlite` project, or for the
 * `postgres` one when its path holds "postgres". Files of a report keep the durations earlier reports gave them
 * unless the report has them.
 */
import fs from "node:fs";
import path from "node:path";

interface Report {
  testResults: { name: string; startTime: number; endTime: number }[];
}

const ROOT = path.resolve(import.meta.dirname, "../..");
const OUT = path.join(import.meta.dirname, "durations.json");
const UNIT = /^(packages|gateway|signer-agent)\//;

const durations: Record<string, number> = fs.existsSync(OUT) ? JSON.parse(fs.readFileSync(OUT, "utf8")) : {};
for (const file of process.argv.slice(2)) {
  const report = JSON.parse(fs.readFileSync(file, "utf8")) as Report;
  const store = file.includes("postgres") ? "postgres" : "sqlite";
  for (const r of report.testResults) {
    const rel = path.relative(ROOT, r.name.replace(/^.*?\/(test|packages|gateway|signer-agent)\//, `${ROOT}/$1/`));
    const project = UNIT.test(rel) ? "unit" : store;
    durations[`${project}:${rel}`] = Math.round(r.endTime - r.startTime);
  }
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => (a < b ? -1 : 1)));
fs.writeFileSync(OUT, `${JSON.stringify(sorted, null, 1)}\n`);
process.stdout.write(`${Object.keys(sorted).length} files in ${path.relative(ROOT, OUT)}\n`);
