/**
 * Lists the surviving and uncovered mutants of the last `npm run test:mutation`
 * (reports/mutation/mutation.json), per file: where, which mutator, what it
 * replaced. `npx tsx scripts/mutation-survivors.ts [file-filter]`.
 */
import fs from "node:fs";

const report = JSON.parse(fs.readFileSync("reports/mutation/mutation.json", "utf8")) as {
  files: Record<
    string,
    { source: string; mutants: { mutatorName: string; replacement?: string; status: string; location: { start: { line: number; column: number } } }[] }
  >;
};
const filter = process.argv[2] ?? "";
for (const [file, f] of Object.entries(report.files)) {
  if (!file.includes(filter)) continue;
  const lines = f.source.split("\n");
  for (const m of f.mutants.filter((x) => x.status === "Survived" || x.status === "NoCoverage")) {
    const line = m.location.start.line;
    console.log(
      `${file}:${line} ${m.status} ${m.mutatorName} -> ${(m.replacement ?? "").replace(/\s+/g, " ").slice(0, 80)}   | ${lines[line - 1]!.trim().slice(0, 90)}`,
    );
  }
}
