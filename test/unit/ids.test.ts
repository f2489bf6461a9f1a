import { newId } from "../../lib/ids";

describe("newId", () => {
	test("ids are strings that sort in creation order, even within one millisecond", () => {
		const ids = Array.from({ length: 2000 }, () => newId());
		expect(new Set(ids).size).toBe(ids.length);
		expect([...ids].sort()).toEqual(ids);
		for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
	});
});
