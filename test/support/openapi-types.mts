// The TypeScript types openapi-typescript generates from an OpenAPI document, as `npx
// openapi-typescript <document> -o <types>` writes them, through its programmatic API. The package
// is an ES module whose CommonJS build still loads ES modules, which Jest's CommonJS cannot, so
// test/integration/typed-client.test.ts runs this with Node: `node openapi-types.mts <document.json> <types.d.ts>`.
import { readFile, writeFile } from "node:fs/promises";
import openapiTS, { astToString } from "openapi-typescript";

const [document, types] = process.argv.slice(2);
await writeFile(types, astToString(await openapiTS(await readFile(document, "utf8"))));
