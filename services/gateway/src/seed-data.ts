/** The demo pipeline `npm run seed` creates through POST /admin/v1/workspaces/{ws}/pipelines. */
export const DEMO_PIPELINE = {
  name: "Vendas",
  stages: [{ name: "Novo" }, { name: "Qualificado" }, { name: "Proposta" }, { name: "Fechamento" }],
} as const;
