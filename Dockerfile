# syntax=docker/dockerfile:1
# Relay: the production image. Multi-stage: dependencies, build, and a runtime stage holding only
# the standalone server (output: "standalone" in next.config.mjs) completed by
# deploy/prepare-standalone.mjs (static assets, migrations, the operator CLI), plus ffmpeg.
#
#   docker build -t relay .
#   docker run -p 3000:3000 -v relay-data:/data relay            # embedded PGlite in /data
#   docker compose up -d                                          # PostgreSQL, S3, two replicas (compose.yaml)
#
# Build arguments: NODE_IMAGE (Node 22 or 24 LTS), INSTALL_FFMPEG=false for an image without
# ffmpeg (a much smaller image; POST /v1/audio-messages then answers 503 audio_conversion_unavailable).

ARG NODE_IMAGE=node:22-bookworm-slim

# ---- dependencies -----------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
COPY scripts/postinstall.mjs scripts/prisma-generate.mjs ./scripts/
COPY deploy/prisma-streams-local-node20 ./deploy/prisma-streams-local-node20
# Dependencies' install scripts are skipped: @prisma/engines' would download native engines the
# app never runs (it uses Prisma's WebAssembly engines and driver adapters), and the others only
# check or tune binaries that work without them. The project's own postinstall (prisma generate,
# offline) runs explicitly.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm run db:generate

# ---- build ------------------------------------------------------------------------------------
FROM deps AS build
COPY . .
RUN npm run build \
 && node deploy/prepare-standalone.mjs

# ---- runtime ----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG INSTALL_FFMPEG=true
# ffmpeg (with ffprobe and libopus) converts audio messages to voice memos.
RUN if [ "$INSTALL_FFMPEG" = "true" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ffmpeg \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /app
ENV NODE_ENV=production \
    HOSTNAME=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    NEXT_MANUAL_SIG_HANDLE=true \
    NEXT_TELEMETRY_DISABLED=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false
# scripts/start.mjs (the server; Next's server.js is there too), .next (server bundles and static assets), the traced node_modules (PGlite and its
# WebAssembly, pg, the Prisma runtime, the AWS SDK, pino, next, react), prisma/migrations (applied
# on start), scripts/admin.mjs and a package.json whose `npm run -s admin` runs it:
#   docker compose exec relay npm run -s admin -- key create --account you@example.com --name prod
# Owned by root and read-only to the server; it writes to /data only (and Next to .next/cache).
COPY --from=build /app/.next/standalone ./
RUN mkdir -p /data \
 && chown node:node /data .next/cache
USER node
VOLUME ["/data"]
EXPOSE 3000
# Ready = the database answers with every migration applied, file storage takes a write, and the
# delivery loops are running (GET /readyz); a stopping instance answers 503 at once.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The app handles SIGTERM itself (NEXT_MANUAL_SIG_HANDLE): it reports not ready, ends streams,
# lets sends and requests under way finish within SHUTDOWN_GRACE_SECONDS (25 by default; give
# the container longer, e.g. stop_grace_period: 30s), returns the rest to the queue and exits 0.
STOPSIGNAL SIGTERM
# `npm start`'s server (scripts/start.mjs: provider webhooks and /v1 answered before Next's
# router), with a 64 MB young generation as package.json runs it: fewer scavenges per request.
CMD ["node", "--max-semi-space-size=64", "scripts/start.mjs"]
