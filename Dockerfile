# Partner Integration Service: one image for the API, the webhook worker and the CLI.
# glibc base (not Alpine): the Temporal worker's native core is built for glibc.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts stay off until the sources are here: `prepare` compiles them.
RUN npm ci --ignore-scripts
COPY . .
# tsc to dist/, then the prebuilt workflow bundle dist/workflow-bundle.js
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/examples ./examples
USER node
EXPOSE 3000
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["start"]
