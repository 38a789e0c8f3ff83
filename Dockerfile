# One image recipe for every service: docker build --build-arg SERVICE=crm . The image holds every service;
# SERVICE (the build argument's value by default, the gateway without it) picks the one a container runs, so one
# image serves them all on Kubernetes, where each Deployment sets SERVICE (deploy/k8s).

# Only the package manifests, at their paths, and the patches npm ci applies to installed packages
# (patches/, by patch-package): the npm ci below is then cached until one of them changes, instead of
# running again for every change of a source file.
FROM node:20-bookworm-slim AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests && cp package.json package-lock.json .npmrc /manifests/ && cp -r patches /manifests/ \
  && for f in packages/*/package.json services/*/package.json; do \
       mkdir -p "/manifests/$(dirname "$f")" && cp "$f" "/manifests/$f"; \
     done

FROM node:20-bookworm-slim AS build
ENV TURBO_TELEMETRY_DISABLED=1
WORKDIR /app
COPY --from=manifests /manifests ./
RUN npm ci
COPY . .
RUN npm run build
# The workspaces go to the runtime stage as they are, but without their own node_modules (dev tools).
RUN rm -rf packages/*/node_modules services/*/node_modules

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=manifests /manifests ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/packages ./packages
COPY --from=build /app/services ./services
# Declared after the install so that the images of all services share the layers above.
ARG SERVICE=gateway
RUN test -f "services/${SERVICE}/dist/main.js" || { echo "build with --build-arg SERVICE=<service name>"; exit 1; }
ENV SERVICE=${SERVICE}
USER node
# The heap budget that keeps a process under 150 MB of RSS under load (scripts/stack.mjs, bench/RESULTS.md).
ENV NODE_MAX_OLD_SPACE_MB=96 NODE_MAX_SEMI_SPACE_MB=8
CMD ["sh", "-c", "exec node --max-old-space-size=${NODE_MAX_OLD_SPACE_MB} --max-semi-space-size=${NODE_MAX_SEMI_SPACE_MB} services/${SERVICE}/dist/main.js"]
