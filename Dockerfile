FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:24-bookworm-slim
# Production: JSON log lines; every node serves its health paths and its Prometheus metrics
# (docs/observability.md).
ENV NODE_ENV=production \
    SERVICEDIR=/app/dist/services \
    HEALTH_PORT=3001 \
    METRICS_PORT=3030
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
# Without MONGO_URI the catalogue keeps its SQLite database here, as the unprivileged user.
RUN mkdir data && chown node:node data
USER node
EXPOSE 3000 3030
# Ready: the node has started, reaches NATS, and every service it needs answers, stores included
# (docs/operations.md, "Health on every node"); compose uses this check for every catalogue service.
# It prints the answer, so `docker inspect` shows what a node not ready waits for (`waitingFor`).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.HEALTH_PORT}/health/ready`).then(async r => { console.log(r.status, await r.text()); process.exit(r.ok ? 0 : 1) }, e => { console.log(e.message); process.exit(1) })"]
# Node's flags are those of `npm start` (lib/config/node-flags.ts says why).
CMD ["node", "--max-semi-space-size=16", "--v8-pool-size=1", "node_modules/moleculer/bin/moleculer-runner.js", "--config", "dist/moleculer.config.js"]
