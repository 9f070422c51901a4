# Flakehouse: the daemon on its embedded default (chDB + on-disk queue in /data).
FROM node:24-bookworm-slim

# GLIBC_TUNABLES: the malloc setting `serve` runs with (bin/malloc-tunables.js), set here so it
# does not start twice to apply it.
ENV NODE_ENV=production \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576 \
    SERVICE_DATA_DIR=/data \
    SERVICE_PORT=8080 \
    SERVICE_HOST=0.0.0.0

WORKDIR /app
COPY package.json package-lock.json ./
# The client package (client/) is a workspace: npm ci links it, so its package.json must be there.
COPY client/package.json ./client/
# Scripts off: nothing in the tree needs one at install. tsx (a runtime dependency) loads the
# TypeScript sources; the CLI build (esbuild, a dev dependency) is for the test suite.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
# The client's source: the server's CLI runs the client's commands, and both import its contract.
COPY client/src ./client/src
COPY web ./web
COPY pipelines ./pipelines
COPY config ./config
COPY tsconfig.json ./
# The dashboard, built into the image (Vite is a runtime dependency for the first-start build).
RUN npm run build:web

RUN mkdir -p /data && chown -R node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.SERVICE_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

CMD ["node", "bin/flakehouse.js", "serve"]
