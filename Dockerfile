# syntax=docker/dockerfile:1
# The Gatehouse operator image (DESIGN §3): controllers, gateway and health server in one process.
#   docker build -t gatehouse/operator:dev .          (context: the repository root; see .dockerignore)
#
# Base: node:24-slim, pinned by tag only. Pin it by digest (FROM node:24-slim@sha256:…, the digest from
# `docker buildx imagetools inspect node:24-slim`) where the build can pull; this file was written on
# a machine without a container engine or access to Docker Hub, which cannot resolve the digest.
#
# Node 24 runs the TypeScript sources directly (type stripping): there is no compile step, so the build
# stage only installs the production dependencies of the operator workspace and of the workspace it
# imports (@gatehouse/provider-sdk), from the lockfile, and strips them once into node's compile cache.
#
# Runtime: non-root (65532), read-only root filesystem. Writable paths: /tmp only (os.tmpdir(), for
# libraries' scratch files; the chart mounts an emptyDir there); the operator itself writes no files. It
# needs DATABASE_URL, its runtime login, and never migrates: `node /app/operator/src/main.ts migrate`
# (the chart's migrate Job: args [migrate]) is the migrate program, run as the owner before it starts.
# The audit CLI is in it too:
#   kubectl exec -n <namespace> <operator pod> -- node /app/operator/src/cli/gatehouse-audit.ts verify
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY operator/package.json operator/
COPY provider-images/sdk/package.json provider-images/sdk/
RUN npm ci --omit=dev --workspace operator --include-workspace-root=false --ignore-scripts --no-audit --no-fund
COPY operator/src operator/src
COPY provider-images/sdk/src provider-images/sdk/src
# node's compile cache, filled with every module the programs load (operator/src/cli/compile-cache.ts)
# and copied into the last stage as it is: a container then never loads node's TypeScript stripper
# (15-20 MiB of each component's memory) and starts sooner. node keys the cache by its version (this
# stage's is the last's), the user and the V8 flags, and each file's path and content: so it is filled
# as the last stage's USER, with the ENTRYPOINT's V8 flags, its NODE_ENV and the same /app paths.
# Read-only at run time; a module it lacks is stripped as without it.
RUN ["install", "-d", "-o", "65532", "-g", "65532", "/app/compile-cache"]
USER 65532:65532
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/compile-cache
RUN ["node", "--optimize-for-size", "/app/operator/src/cli/compile-cache.ts"]

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/operator operator
COPY --from=build /app/provider-images/sdk provider-images/sdk
COPY --from=build /app/compile-cache compile-cache
ENV NODE_COMPILE_CACHE=/app/compile-cache
USER 65532:65532
# Gateway (agent API, model proxy, provider JWKS) and health server (/healthz, /readyz, /metrics).
EXPOSE 8443 8081
# --optimize-for-size: every major collection of V8's reduces memory (it compacts, and drops bytecode
# it compiles again when needed), so the heap stays close to what is live. At 2 000 sessions the peaks
# were 11-15 % lower for 31-51 % more CPU; at 10 000 both components stayed under 300 MiB for nearly
# twice the CPU (docs/operations.md, "Memory"). NODE_OPTIONS refuses the flag, so it is here; an image
# built without it must fill the compile cache without it too (the flags are part of the cache's key).
ENTRYPOINT ["node", "--optimize-for-size", "/app/operator/src/main.ts"]
