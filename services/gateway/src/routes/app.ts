import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";

/** The Fastify instance a route plugin registers its routes on (zod schemas). */
export type RouteApp = Parameters<FastifyPluginAsyncZod>[0];
