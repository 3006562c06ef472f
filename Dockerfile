# Vigil: one image for every role; VIGIL_ROLES chooses what a container runs (see docker-compose.yml).
FROM node:24-slim

ENV NODE_ENV=production
# Node keeps each module compiled here: a restarted container is ready sooner.
ENV NODE_COMPILE_CACHE=/tmp/vigil-node-compile-cache
WORKDIR /app

# Dependencies first, so code changes reuse this layer. isolated-vm ships a prebuilt binary for
# linux-x64/glibc (node:24-slim is Debian): no compiler needed.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY --chown=node:node . .
USER node

# read API, gateway, MQTT, ops (/healthz, /readyz, /metrics in processes without the api role)
EXPOSE 8080 8081 1883 9464

# Node 24 runs the TypeScript sources directly; isolated-vm requires --no-node-snapshot.
CMD ["node", "--no-node-snapshot", "src/main.ts"]
