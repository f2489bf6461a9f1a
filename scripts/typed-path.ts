import path from "node:path";

/**
 * A path the operator typed on the command line, from the folder they typed it in: npm runs a script from the package's root and
 * names the folder it was run from in INIT_CWD, so `cd docs && npm run backup -- ./copy` writes `docs/copy`, as a shell would.
 */
export const typedPath = (typed: string): string => path.resolve(process.env.INIT_CWD ?? process.cwd(), typed);
