# One image for all five functions. Each Knative Service picks its entry point with `command`
# (knative/*/service-*.yaml); the default below runs detect.
# Build: docker build -t ghcr.io/cozystack/source-watcher-recovery:0.1.0 .
# The Node major CI tests on: package.json engines, toolchain/, .ci/run and this image agree (a
# test checks; docs/adr/0034-node-24.md). CI builds this same file on a base made locally from
# Debian packages and toolchain/'s Node, passed in as NODE_IMAGE (.ci/image/build.sh,
# docs/adr/0035-image-built-in-ci.md).
ARG NODE_IMAGE=node:24-alpine

# --- build: all dependencies, compile TypeScript to dist/ ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY shared ./shared
COPY functions ./functions
RUN npm run build

# --- runtime: production dependencies and the compiled code only ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# Numeric, so that Kubernetes can verify runAsNonRoot. Files stay root-owned and read-only.
USER 65532:65532
EXPOSE 8080
CMD ["node", "dist/functions/detect/main.js"]
