import type { FastifyReply, FastifyRequest } from "fastify";
import { sameSecret } from "../../keys.js";
import { authorizationHeaders } from "../../plugins/auth.js";
import { errorBody } from "../../plugins/errors.js";

/**
 * The admin token check: one `Authorization: Bearer <ADMIN_TOKEN>` header, compared in constant time.
 * Without ADMIN_TOKEN every admin request is a 401.
 */
export const adminTokenHook =
  (token: string | undefined) => async (req: FastifyRequest, reply: FastifyReply) => {
    const headers = authorizationHeaders(req.raw.rawHeaders);
    const match = headers.length === 1 ? /^Bearer\s+(\S+)\s*$/i.exec(headers[0]!) : null;
    if (!token || !match || !sameSecret(match[1]!, token))
      return reply
        .code(401)
        .send(errorBody("unauthorized", "admin routes need Authorization: Bearer <ADMIN_TOKEN>"));
  };
