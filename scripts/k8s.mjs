// Writes deploy/k8s/ from the list of backend services (scripts/stack.mjs's SERVICES) and the tables
// below: `npm run k8s` after changing either. tests/deploy/k8s.test.ts regenerates the files in memory and
// fails when the committed ones differ, so the manifests never drift from the code that starts the stack.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { heapFlags, SERVICES } from "./stack.mjs";

const NAMESPACE = "funil";
const PART_OF = { "app.kubernetes.io/part-of": "funil" };
/** Every process exits within SHUTDOWN_TIMEOUT_MS of SIGTERM; Kubernetes waits longer before SIGKILL. */
const SHUTDOWN_TIMEOUT_MS = 20_000;
/** Endpoints and the gateways' DNS view (RPC_RESOLVE_MS, 5 s) forget a stopping pod before it gets SIGTERM. */
const PRE_STOP_SLEEP_S = 5;
const GRACE_PERIOD_S = 30;

/** The RPC port of each backend service: its own default (services/<name>/src/config.ts). */
export const PORTS = { crm: 7001, timeline: 7002, scheduling: 7003, webhooks: 7004, learning: 7005 };
const GATEWAY_PORT = 8080;
/** Each backend's GET /metrics (plain HTTP; its RPC port is HTTP/2 only); the gateway's is on its public port. */
const METRICS_PORT = 9464;
/** Where Prometheus and the OpenTelemetry Collector run: the backends' metrics port is open to it alone. */
const MONITORING_NAMESPACE = "monitoring";
/** The collector's OTLP/HTTP port, the only one every Funil process may send to in that namespace. */
const OTLP_HTTP_PORT = 4318;
const AUTH_PORT = 7100;
const PGBOUNCER_PORT = 6432;
const REDIS_PORT = 6379;
const NATS = { replicas: 3, client: 4222, cluster: 6222, monitor: 8222, storage: "10Gi" };

/**
 * Requests and limits per process. Memory: the highest RSS one process reached under load in the
 * benchmarks (MB), with the heap budget of scripts/stack.mjs: the gateway 128 on the crm reads
 * (bench/RESULTS.md) and up to 234 on the composed reads of bench/RESULTS-timeline.md; crm 119 on its
 * own reads, 162 behind scheduling's slots (bench/RESULTS-scheduling.md); timeline 198 draining a backlog
 * of a million inbox messages; scheduling 215 computing a month of slots; learning 186 on the learner
 * pages at full size in the latest runs of bench/RESULTS-learning.md; webhooks 198 at 10 000
 * deliveries/s (bench/RESULTS-webhooks.md). The request is that peak rounded up to 32 Mi, the limit half
 * as much again, for a collection that runs late. CPU: what each process used at the benchmarks' top
 * rates (µs per request × requests per second, same files): the gateway 0.45-0.75 of a core, crm
 * 0.3-0.85, timeline 0.25-0.55 (reads, and draining a backlog), scheduling 0.5-0.75 (bookings, slots),
 * learning 0.35-0.65, webhooks 0.9; the request is about half of the top, so that the autoscaler (70 % of
 * the request) adds copies before one copy is saturated. The limit is one core, JavaScript running on one
 * thread; two for the gateway, whose compression runs on libuv's pool, and webhooks, whose POSTs run in a
 * worker thread.
 */
const SIZES = {
  gateway: { rssMb: 234, cpu: "500m", cpuLimit: "2", maxReplicas: 6 },
  crm: { rssMb: 162, cpu: "400m", cpuLimit: "1", maxReplicas: 6 },
  timeline: { rssMb: 198, cpu: "250m", cpuLimit: "1", maxReplicas: 4 },
  scheduling: { rssMb: 215, cpu: "400m", cpuLimit: "1", maxReplicas: 4 },
  learning: { rssMb: 186, cpu: "300m", cpuLimit: "1", maxReplicas: 3 },
  webhooks: { rssMb: 198, cpu: "500m", cpuLimit: "2", maxReplicas: 4 },
};
const MIN_REPLICAS = 2;
/**
 * Connections per process's request pool; each also holds its outbox relay's session. At every autoscaler's
 * maximum the databases see 27 × (5 + 1) = 162 at most, a database at most 6 × 6 = 36 (PgBouncer's pool).
 */
const DATABASE_POOL_MAX = 5;

/** Who calls whom inside the cluster (NetworkPolicies are built from this list and nothing else). */
const CALLS = [
  ...Object.keys(PORTS).map((name) => ({ from: "gateway", to: name, port: PORTS[name] })),
  // A booking asks crm for the contact, the deal and the members (services/scheduling/src/crm.ts).
  { from: "scheduling", to: "crm", port: PORTS.crm },
  // webhooks asks the gateway's internal Auth service for a key's current scopes at every attempt.
  { from: "webhooks", to: "gateway", port: AUTH_PORT },
  ...["gateway", ...Object.keys(PORTS)].map((from) => ({ from, to: "pgbouncer", port: PGBOUNCER_PORT })),
  // Every process publishes its outbox: the services their events, the gateway its workspaces' and keys'.
  ...["gateway", ...Object.keys(PORTS)].map((from) => ({ from, to: "nats", port: NATS.client })),
  { from: "nats", to: "nats", port: NATS.cluster },
  ...["gateway", "scheduling"].map((from) => ({ from, to: "redis", port: REDIS_PORT })),
];
/** Addresses a webhook may never reach (in-cluster and private ranges); the rest of the internet it may. */
const PRIVATE_V4 = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];
const PRIVATE_V6 = ["::1/128", "fc00::/7", "fe80::/10"];

/**
 * opts: { image = "funil:latest" (the repository's Dockerfile; every service is in it, SERVICE picks one;
 *         `npm run k8s -- --image=registry/funil:1.2`, or kustomize's `images:` at apply time),
 *         pgbouncerImage, natsImage, redisImage }.
 * Returns { "<file>.yaml": [objects] }.
 */
export function manifests(opts = {}) {
  for (const name of SERVICES)
    if (!PORTS[name] || !SIZES[name]) throw new Error(`k8s: no port or size for ${name}`);
  const o = {
    image: "funil:latest",
    pgbouncerImage: "edoburu/pgbouncer:v1.25.1-p0",
    natsImage: "nats:2.10-alpine",
    redisImage: "redis:7",
    ...opts,
  };
  const files = {
    "namespace.yaml": [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE, labels: PART_OF } },
    ],
    "config.yaml": [configMap()],
    "network-policies.yaml": networkPolicies(),
    "nats.yaml": nats(o.natsImage),
    "pgbouncer.yaml": pgbouncer(o.pgbouncerImage),
    "redis.yaml": redis(o.redisImage),
    "gateway.yaml": gateway(o.image),
  };
  for (const name of SERVICES) files[`${name}.yaml`] = backend(name, o.image);
  return files;
}

const HEADER = [
  "# Generated by scripts/k8s.mjs (npm run k8s) from scripts/stack.mjs's SERVICES: edit the generator,",
  '# not this file. Secrets are not here: docs/deploy.md, "Deploy on Kubernetes", says how to create them.',
  "",
].join("\n");

/** The files' text, as committed: { "<file>.yaml": text }, plus the kustomization that lists them. */
export function render(opts) {
  const out = {};
  const files = manifests(opts);
  for (const [file, objects] of Object.entries(files))
    out[file] = HEADER + objects.map((obj) => stringify(obj, { lineWidth: 0 })).join("---\n");
  out["kustomization.yaml"] =
    HEADER +
    stringify(
      {
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        namespace: NAMESPACE,
        resources: Object.keys(files),
      },
      { lineWidth: 0 },
    );
  return out;
}

const dns = (service) => `${service}.${NAMESPACE}.svc.cluster.local`;
const labels = (app) => ({ "app.kubernetes.io/name": app, ...PART_OF });
const selector = (app) => ({ matchLabels: { "app.kubernetes.io/name": app } });
const meta = (name, app = name) => ({ name, namespace: NAMESPACE, labels: labels(app) });
const natsUrls = () =>
  Array.from({ length: NATS.replicas }, (_, i) => `nats://nats-${i}.${dns("nats")}:${NATS.client}`).join(",");

/** What every Funil process reads from its environment, but the secrets and its own SERVICE. */
function configMap() {
  const data = {
    HOST: "0.0.0.0",
    AUTH_HOST: "0.0.0.0",
    LOG_LEVEL: "info",
    NATS_URL: natsUrls(),
    NATS_STREAM_REPLICAS: String(NATS.replicas),
    REDIS_URL: `redis://${dns("redis")}:${REDIS_PORT}`,
    DATABASE_POOL_MAX: String(DATABASE_POOL_MAX),
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    AUTH_PORT: String(AUTH_PORT),
    AUTH_URL: `http://${dns("gateway-auth")}:${AUTH_PORT}`,
    METRICS_PORT: String(METRICS_PORT),
    // Tracing: off while the endpoint is empty (docs/deploy.md says how to turn it on); parent-based, so
    // the gateway or the consumer that starts a trace keeps 10 % and every process after it follows.
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0.1",
  };
  // A headless Service's name resolves to every ready pod: the RPC clients balance over them.
  for (const name of SERVICES) {
    data[`${name.toUpperCase()}_PORT`] = String(PORTS[name]);
    data[`${name.toUpperCase()}_URL`] = `http://${dns(name)}:${PORTS[name]}`;
  }
  return { apiVersion: "v1", kind: "ConfigMap", metadata: meta("funil-config", "funil"), data };
}

const secret = (key) => ({ name: key, valueFrom: { secretKeyRef: { name: "funil-secrets", key } } });
/** Each process gets the secrets it reads, and no other. */
const SECRETS = {
  gateway: ["DATABASE_URL", "ADMIN_TOKEN", "CURSOR_KEYS"],
  webhooks: ["DATABASE_URL", "CURSOR_KEYS", "WEBHOOK_SECRET_KEY"],
};

function resources(app) {
  const { rssMb, cpu, cpuLimit } = SIZES[app];
  const request = Math.ceil(rssMb / 32) * 32;
  return {
    requests: { cpu, memory: `${request}Mi` },
    limits: { cpu: cpuLimit, memory: `${Math.ceil((request * 1.5) / 32) * 32}Mi` },
  };
}

const grpcProbe = (port, periodSeconds, failureThreshold) => ({
  grpc: { port },
  periodSeconds,
  failureThreshold,
});
const httpProbe = (pathName, port, periodSeconds, failureThreshold) => ({
  httpGet: { path: pathName, port },
  periodSeconds,
  failureThreshold,
});

/**
 * A Funil process: one container of the image, SERVICE picking which. `metricsPort`: where its GET /metrics
 * answers, announced by the prometheus.io annotations that Prometheus's Kubernetes discovery keeps pods by.
 */
function podTemplate(app, image, { ports, probes, env = [], metricsPort }) {
  const [oldSpace, semiSpace] = heapFlags({}, app).map((flag) => flag.split("=")[1]);
  return {
    metadata: {
      labels: labels(app),
      annotations: {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": String(metricsPort),
        "prometheus.io/path": "/metrics",
      },
    },
    spec: {
      terminationGracePeriodSeconds: GRACE_PERIOD_S,
      automountServiceAccountToken: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        seccompProfile: { type: "RuntimeDefault" },
      },
      // Copies on different nodes where the cluster has them: losing a node loses one copy.
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: "kubernetes.io/hostname",
          whenUnsatisfiable: "ScheduleAnyway",
          labelSelector: selector(app),
        },
      ],
      containers: [
        {
          name: app,
          image,
          imagePullPolicy: "IfNotPresent",
          env: [
            { name: "SERVICE", value: app },
            { name: "OTEL_SERVICE_NAME", value: app },
            { name: "NODE_MAX_OLD_SPACE_MB", value: oldSpace },
            { name: "NODE_MAX_SEMI_SPACE_MB", value: semiSpace },
            ...env,
            ...(SECRETS[app] ?? ["DATABASE_URL", "CURSOR_KEYS"]).map(secret),
          ],
          envFrom: [{ configMapRef: { name: "funil-config" } }],
          ports,
          resources: resources(app),
          ...probes,
          lifecycle: { preStop: { exec: { command: ["sleep", String(PRE_STOP_SLEEP_S)] } } },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] },
          },
          volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
        },
      ],
      volumes: [{ name: "tmp", emptyDir: {} }],
    },
  };
}

function deployment(app, template) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(app),
    // No replicas: the HorizontalPodAutoscaler owns the count (an apply would otherwise reset it).
    spec: {
      selector: selector(app),
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template,
    },
  };
}

function autoscaler(app) {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: meta(app),
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: app },
      minReplicas: MIN_REPLICAS,
      maxReplicas: SIZES[app].maxReplicas,
      metrics: [
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
        },
      ],
    },
  };
}

const disruptionBudget = (app) => ({
  apiVersion: "policy/v1",
  kind: "PodDisruptionBudget",
  metadata: meta(app),
  spec: { maxUnavailable: 1, selector: selector(app) },
});

/**
 * A backend service. Readiness and start-up ask its grpc.health.v1.Health (SERVING while its database
 * answers and it is not stopping); the start-up probe allows five minutes for migrations. Liveness only
 * asks that the port accepts connections: Health says NOT_SERVING while the database is away, and
 * restarting every copy would not bring the database back.
 */
function backend(name, image) {
  const port = PORTS[name];
  const template = podTemplate(name, image, {
    ports: [
      { name: "rpc", containerPort: port },
      { name: "metrics", containerPort: METRICS_PORT },
    ],
    metricsPort: METRICS_PORT,
    probes: {
      startupProbe: grpcProbe(port, 5, 60),
      readinessProbe: grpcProbe(port, 5, 2),
      livenessProbe: { tcpSocket: { port }, periodSeconds: 10, failureThreshold: 3 },
    },
  });
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(name),
    spec: { clusterIP: "None", selector: { "app.kubernetes.io/name": name }, ports: [{ name: "rpc", port }] },
  };
  return [deployment(name, template), service, autoscaler(name), disruptionBudget(name)];
}

/** The gateway: the public HTTP port and the internal Auth port, each behind a ClusterIP Service. */
function gateway(image) {
  const template = podTemplate("gateway", image, {
    ports: [
      { name: "http", containerPort: GATEWAY_PORT },
      { name: "auth", containerPort: AUTH_PORT },
    ],
    env: [{ name: "PORT", value: String(GATEWAY_PORT) }],
    metricsPort: GATEWAY_PORT,
    probes: {
      startupProbe: httpProbe("/healthz", "http", 5, 60),
      readinessProbe: httpProbe("/readyz?scope=self", "http", 5, 2),
      livenessProbe: httpProbe("/healthz", "http", 10, 3),
    },
  });
  const service = (name, port, portName) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(name, "gateway"),
    spec: {
      type: "ClusterIP",
      selector: { "app.kubernetes.io/name": "gateway" },
      ports: [{ name: portName, port, targetPort: portName }],
    },
  });
  return [
    deployment("gateway", template),
    service("gateway", GATEWAY_PORT, "http"),
    service("gateway-auth", AUTH_PORT, "auth"),
    autoscaler("gateway"),
    disruptionBudget("gateway"),
  ];
}

/** nats.conf: server_name from the pod, JetStream on the volume, a route to every server. */
function natsConf() {
  const routes = Array.from(
    { length: NATS.replicas },
    (_, i) => `nats://nats-${i}.${dns("nats")}:${NATS.cluster}`,
  );
  return [
    "server_name: $POD_NAME",
    `listen: 0.0.0.0:${NATS.client}`,
    `http: 0.0.0.0:${NATS.monitor}`,
    "jetstream {",
    "  store_dir: /data",
    // Below the volume's 10 Gi, so JetStream refuses writes before the file system fills.
    "  max_file_store: 9G",
    "  max_memory_store: 256M",
    "}",
    "cluster {",
    "  name: funil",
    `  listen: 0.0.0.0:${NATS.cluster}`,
    "  routes: [",
    ...routes.map((r) => `    ${r}`),
    "  ]",
    "}",
    "",
  ].join("\n");
}

/** One NATS server: the config from its ConfigMap, its name from the pod, JetStream health as probes. */
function natsContainer(image) {
  const health = (query, periodSeconds, failureThreshold) =>
    httpProbe(`/healthz${query}`, NATS.monitor, periodSeconds, failureThreshold);
  return {
    name: "nats",
    image,
    args: ["-c", "/etc/nats/nats.conf"],
    env: [
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      // The Go runtime collects before the container's memory limit is reached.
      { name: "GOMEMLIMIT", value: "900MiB" },
    ],
    ports: [
      { name: "client", containerPort: NATS.client },
      { name: "cluster", containerPort: NATS.cluster },
      { name: "monitor", containerPort: NATS.monitor },
    ],
    resources: { requests: { cpu: "200m", memory: "256Mi" }, limits: { cpu: "1", memory: "1Gi" } },
    startupProbe: health("", 5, 60),
    readinessProbe: health("", 5, 2),
    // Alive is JetStream running: a cluster without quorum is not fixed by a restart.
    livenessProbe: health("?js-enabled-only=true", 10, 3),
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
    volumeMounts: [
      { name: "config", mountPath: "/etc/nats" },
      { name: "data", mountPath: "/data" },
    ],
  };
}

/**
 * NATS with JetStream, three servers that route to each other: a stream with NATS_STREAM_REPLICAS=3
 * survives the loss of one. server_name is the pod's name, which JetStream clustering needs unique and
 * stable; the headless Service publishes not-ready pods so that the routes resolve while the cluster forms.
 */
function nats(image) {
  const conf = natsConf();
  const statefulSet = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: meta("nats"),
    spec: {
      serviceName: "nats",
      replicas: NATS.replicas,
      // All three start together: none is ready until the cluster has its quorum.
      podManagementPolicy: "Parallel",
      selector: selector("nats"),
      template: {
        metadata: { labels: labels("nats") },
        spec: {
          terminationGracePeriodSeconds: 60,
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
          containers: [natsContainer(image)],
          volumes: [{ name: "config", configMap: { name: "nats-config" } }],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: NATS.storage } } },
        },
      ],
    },
  };
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("nats-config", "nats"),
      data: { "nats.conf": conf },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta("nats"),
      spec: {
        clusterIP: "None",
        publishNotReadyAddresses: true,
        selector: { "app.kubernetes.io/name": "nats" },
        ports: [
          { name: "client", port: NATS.client },
          { name: "cluster", port: NATS.cluster },
          { name: "monitor", port: NATS.monitor },
        ],
      },
    },
    statefulSet,
    disruptionBudget("nats"),
  ];
}

/** pgbouncer.ini: every database of the one PostgreSQL server, session mode. */
function pgbouncerIni() {
  return [
    "[databases]",
    // Every database on the one server (each service creates and migrates its own), found through the
    // ExternalName Service "postgres" the operator creates (docs/deploy.md).
    `* = host=${dns("postgres")} port=5432`,
    "",
    "[pgbouncer]",
    "listen_addr = 0.0.0.0",
    `listen_port = ${PGBOUNCER_PORT}`,
    // TCP only: no Unix socket to write on the container's read-only file system.
    "unix_socket_dir =",
    "auth_type = scram-sha-256",
    "auth_file = /etc/pgbouncer/userlist.txt",
    "pool_mode = session",
    "default_pool_size = 36",
    "max_client_conn = 500",
    // A server connection left idle by a client that went is closed after a minute.
    "server_idle_timeout = 60",
    "server_tls_sslmode = prefer",
    "ignore_startup_parameters = extra_float_digits",
    "",
  ].join("\n");
}

/**
 * PgBouncer in session mode in front of the external PostgreSQL: the services keep named prepared
 * statements for the life of a connection, which transaction mode cannot follow (PgBouncer 1.18). A pool
 * per database of 30 holds every client of the busiest database at maxReplicas (6 × DATABASE_POOL_MAX).
 */
function pgbouncer(image) {
  const ini = pgbouncerIni();
  const template = {
    metadata: { labels: labels("pgbouncer") },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 70, runAsGroup: 70 },
      containers: [
        {
          name: "pgbouncer",
          image,
          command: ["pgbouncer", "/etc/pgbouncer/pgbouncer.ini"],
          ports: [{ name: "postgres", containerPort: PGBOUNCER_PORT }],
          resources: { requests: { cpu: "100m", memory: "32Mi" }, limits: { cpu: "1", memory: "128Mi" } },
          readinessProbe: { tcpSocket: { port: PGBOUNCER_PORT }, periodSeconds: 5 },
          livenessProbe: { tcpSocket: { port: PGBOUNCER_PORT }, periodSeconds: 10 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] },
          },
          volumeMounts: [{ name: "config", mountPath: "/etc/pgbouncer", readOnly: true }],
        },
      ],
      // pgbouncer.ini from the ConfigMap, userlist.txt (the role and its password) from a Secret.
      volumes: [
        {
          name: "config",
          projected: {
            sources: [
              { configMap: { name: "pgbouncer-config" } },
              { secret: { name: "pgbouncer-userlist" } },
            ],
          },
        },
      ],
    },
  };
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("pgbouncer-config", "pgbouncer"),
      data: { "pgbouncer.ini": ini },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta("pgbouncer"),
      spec: { replicas: 2, selector: selector("pgbouncer"), template },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta("pgbouncer"),
      spec: {
        selector: { "app.kubernetes.io/name": "pgbouncer" },
        ports: [{ name: "postgres", port: PGBOUNCER_PORT }],
      },
    },
    disruptionBudget("pgbouncer"),
  ];
}

/**
 * Redis in the cluster, one copy without persistence: it holds rate-limit counts, key-cache invalidations
 * and scheduling's early guards, all rebuilt after a restart (PostgreSQL decides every write), and the
 * gateway and scheduling keep answering while it is away.
 */
function redis(image) {
  const template = {
    metadata: { labels: labels("redis") },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 999, runAsGroup: 999 },
      containers: [
        {
          name: "redis",
          image,
          args: ["--save", "", "--appendonly", "no"],
          ports: [{ name: "redis", containerPort: REDIS_PORT }],
          resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "1", memory: "256Mi" } },
          readinessProbe: { tcpSocket: { port: REDIS_PORT }, periodSeconds: 5 },
          livenessProbe: { tcpSocket: { port: REDIS_PORT }, periodSeconds: 10 },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        },
      ],
    },
  };
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta("redis"),
      spec: { replicas: 1, selector: selector("redis"), template },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta("redis"),
      spec: { selector: { "app.kubernetes.io/name": "redis" }, ports: [{ name: "redis", port: REDIS_PORT }] },
    },
  ];
}

const podSelector = (app) => ({ podSelector: { matchLabels: { "app.kubernetes.io/name": app } } });
const policy = (name, spec) => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "NetworkPolicy",
  metadata: meta(name, "funil"),
  spec,
});

/**
 * Nothing moves but what CALLS lists: a default deny both ways, DNS for every pod, then per app its
 * callers (ingress) and its callees (egress), webhooks' POSTs to the internet outside private ranges
 * (the cluster's pod and service addresses must be in them), PgBouncer to PostgreSQL, the gateway's
 * public port to anyone (its Ingress or load balancer), each backend's metrics port to the monitoring
 * namespace (Prometheus), and every Funil process's spans to that namespace's OTLP/HTTP port (the collector). DNS is the kube-dns pods of kube-system: a cluster that answers
 * elsewhere (NodeLocal DNSCache's link-local address) widens that rule.
 */
function networkPolicies() {
  const apps = [...new Set(CALLS.flatMap((c) => [c.from, c.to]))].sort();
  const out = [
    policy("default-deny", { podSelector: {}, policyTypes: ["Ingress", "Egress"] }),
    policy("dns", {
      podSelector: {},
      policyTypes: ["Egress"],
      egress: [
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    }),
  ];
  for (const app of apps) {
    const ingress = byPort(CALLS.filter((c) => c.to === app)).map(([port, calls]) => ({
      from: calls.map((c) => podSelector(c.from)),
      ports: [{ protocol: "TCP", port }],
    }));
    const egress = CALLS.filter((c) => c.from === app).map((c) => ({
      to: [podSelector(c.to)],
      ports: [{ protocol: "TCP", port: c.port }],
    }));
    if (app === "gateway") ingress.push({ ports: [{ protocol: "TCP", port: GATEWAY_PORT }] });
    if (SERVICES.includes(app))
      ingress.push({
        from: [
          { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": MONITORING_NAMESPACE } } },
        ],
        ports: [{ protocol: "TCP", port: METRICS_PORT }],
      });
    if (app === "webhooks")
      egress.push({
        to: [
          { ipBlock: { cidr: "0.0.0.0/0", except: PRIVATE_V4 } },
          { ipBlock: { cidr: "::/0", except: PRIVATE_V6 } },
        ],
      });
    if (app === "pgbouncer") egress.push({ ports: [{ protocol: "TCP", port: 5432 }] });
    if (app === "gateway" || SERVICES.includes(app))
      egress.push({
        to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": MONITORING_NAMESPACE } } }],
        ports: [{ protocol: "TCP", port: OTLP_HTTP_PORT }],
      });
    out.push(
      policy(app, {
        podSelector: podSelector(app).podSelector,
        policyTypes: ["Ingress", "Egress"],
        ingress,
        egress,
      }),
    );
  }
  return out;
}

function byPort(calls) {
  const ports = new Map();
  for (const c of calls) ports.set(c.port, [...(ports.get(c.port) ?? []), c]);
  return [...ports];
}

export const K8S_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "deploy", "k8s");

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flag = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const files = render({ ...(flag("image") && { image: flag("image") }) });
  fs.mkdirSync(K8S_DIR, { recursive: true });
  for (const file of fs.readdirSync(K8S_DIR)) if (!(file in files)) fs.rmSync(path.join(K8S_DIR, file));
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(K8S_DIR, file), text);
  process.stdout.write(
    `wrote ${Object.keys(files).length} files to ${path.relative(process.cwd(), K8S_DIR)}\n`,
  );
}
