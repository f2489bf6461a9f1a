// @ts-check
// Type-aware lint (typescript-eslint): every ctx.call and broker.call is a promise, so a promise
// left floating, or handed to something that ignores it, is an error rather than a style point.
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

export default tseslint.config(
	{ ignores: ["dist/", "coverage/", "data/"] },
	js.configs.recommended,
	...tseslint.configs.recommendedTypeChecked,
	{
		languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
		rules: {
			"@typescript-eslint/no-floating-promises": "error",
			"@typescript-eslint/no-misused-promises": "error",
			"no-shadow": "off",
			"@typescript-eslint/no-shadow": "error",
			"@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
			// `{ secret: _secret, ...rest }` leaves a key out on purpose.
			"@typescript-eslint/no-unused-vars": ["error", { varsIgnorePattern: "^_", argsIgnorePattern: "^_", ignoreRestSiblings: true }],
			// An async method that does not await still keeps the Promise-returning signature an
			// interface (a store, a moleculer lifecycle hook) asks for, and turns a throw into a rejection.
			"@typescript-eslint/require-await": "off",
		},
	},
	{
		// A test reads answers as parsed JSON (`any`) and asserts their shape: the assertion is the
		// check. Its hostile inputs hold control characters on purpose.
		files: ["test/**/*.ts"],
		rules: {
			"@typescript-eslint/no-explicit-any": "off",
			"no-control-regex": "off",
			"@typescript-eslint/no-unsafe-assignment": "off",
			"@typescript-eslint/no-unsafe-member-access": "off",
			"@typescript-eslint/no-unsafe-argument": "off",
			"@typescript-eslint/no-unsafe-call": "off",
			"@typescript-eslint/no-unsafe-return": "off",
			"@typescript-eslint/unbound-method": "off",
		},
	},
	{
		files: ["**/*.js", "**/*.mjs"],
		extends: [tseslint.configs.disableTypeChecked],
		languageOptions: { globals: { module: "readonly", require: "readonly", process: "readonly", console: "readonly" } },
	},
	prettier,
);
