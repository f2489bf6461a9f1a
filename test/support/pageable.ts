/**
 * Every `pageable` that either page (POST /author, POST /game) refuses whatever its record type:
 * [case, pageable, the field the msg names]. Each page's test adds its own sort cases.
 */
export const refusedPageables: [string, unknown, string][] = [
	["pageable missing", undefined, "pageable"],
	["pageable null", null, "pageable"],
	["pageable not an object", "all", "pageable"],
	["pageNumber missing", { pageSize: 5 }, "pageable.pageNumber"],
	["pageSize missing", { pageNumber: 0 }, "pageable.pageSize"],
	["pageNumber null", { pageNumber: null, pageSize: 5 }, "pageable.pageNumber"],
	["pageSize null", { pageNumber: 0, pageSize: null }, "pageable.pageSize"],
	["pageNumber empty string", { pageNumber: "", pageSize: 5 }, "pageable.pageNumber"],
	["pageSize empty string", { pageNumber: 0, pageSize: "" }, "pageable.pageSize"],
	["pageNumber negative", { pageNumber: -1, pageSize: 5 }, "pageable.pageNumber"],
	["pageSize negative", { pageNumber: 0, pageSize: -5 }, "pageable.pageSize"],
	["pageSize over 1000", { pageNumber: 0, pageSize: 1001 }, "pageable.pageSize"],
	["pageSize not whole", { pageNumber: 0, pageSize: 2.5 }, "pageable.pageSize"],
	["pageNumber not numeric", { pageNumber: "first", pageSize: 5 }, "pageable.pageNumber"],
];
