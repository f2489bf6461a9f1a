// The in-process catalogue of the tests: nothing on disk, a free port, quiet logs.
process.env.STORAGE ??= "memory";
process.env.PORT ??= "0";
process.env.LOGLEVEL ??= "error";
