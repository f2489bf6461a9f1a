import { DATA_SERVICE_NAMES, needs, SERVICE_NAMES } from "../../lib/catalogue/services";

describe("the catalogue's services (lib/catalogue/services.ts)", () => {
	test("the gateway and the three data services, in the order SERVICES lists them by default", () => {
		expect(SERVICE_NAMES).toEqual(["api", "authors", "categories", "games"]);
		expect(DATA_SERVICE_NAMES).toEqual(["authors", "categories", "games"]);
	});

	test("a node needs its own collection and the services it calls; the gateway needs every data service", () => {
		expect(needs("api")).toEqual(["authors", "categories", "games"]);
		expect(needs("games")).toEqual(["games", "authors", "categories"]);
		expect(needs("authors")).toEqual(["authors", "games"]);
		expect(needs("categories")).toEqual(["categories", "games"]);
	});

	test("a service that is not the catalogue's needs none, even one named like Object.prototype's members", () => {
		expect(needs("$node")).toEqual([]);
		expect(needs("constructor")).toEqual([]);
	});
});
