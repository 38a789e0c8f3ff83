# One image recipe for every service: docker build --build-arg SERVICE=crm .
FROM node:20-bookworm-slim AS build
ENV TURBO_TELEMETRY_DISABLED=1
WORKDIR /app
COPY . .
RUN npm ci && npm run build
# The workspaces go to the runtime stage as they are, but without their own node_modules (dev tools).
RUN rm -rf packages/*/node_modules services/*/node_modules

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json /app/.npmrc ./
COPY --from=build /app/packages ./packages
COPY --from=build /app/services ./services
RUN npm ci --omit=dev && npm cache clean --force
# Declared after the install so that the images of all services share the layers above.
ARG SERVICE
RUN test -f "services/${SERVICE}/dist/main.js" || { echo "build with --build-arg SERVICE=<service name>"; exit 1; }
ENV SERVICE=${SERVICE}
USER node
CMD ["sh", "-c", "exec node services/${SERVICE}/dist/main.js"]
