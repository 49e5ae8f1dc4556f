/** one protection scenario in its own process (runner.ts runScenario): SCENARIO (JSON options) in, SCENARIO_OUT (a file) out */
import fs from "node:fs";
import { runScenarioHere } from "./runner";
import type { ScenarioOptions } from "./scenario";

const options = JSON.parse(process.env.SCENARIO ?? "{}") as ScenarioOptions;
const result = await runScenarioHere(options);
fs.writeFileSync(process.env.SCENARIO_OUT!, JSON.stringify(result));
process.exit(0);
