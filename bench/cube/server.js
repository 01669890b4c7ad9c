// Cube 0.33's server core (REST API, query orchestrator, SQL generation) on DuckDB, for the
// bench's side-by-side (bench/cube_compare.py). Cube published no DuckDB driver for 0.33:
// the only one, 1.7.43, brings a dialect that needs Cube's native module (a binary its
// install fetches from GitHub); 0.33's own Postgres dialect writes SQL DuckDB runs
// (date_trunc, AT TIME ZONE), so the driver runs 0.33's SQL. No pre-aggregations: every
// answer reads the facts.
const express = require('express');
const CubejsServerCore = require('@cubejs-backend/server-core').default;
const { PostgresQuery } = require('./node_modules/@cubejs-backend/server-core/node_modules/@cubejs-backend/schema-compiler');
const { DuckDBDriver } = require('@cubejs-backend/duckdb-driver');

// Cube reads its model relative to the working directory.
process.chdir(__dirname);
const app = express();
const core = new CubejsServerCore({
  dbType: 'duckdb',
  driverFactory: () => new DuckDBDriver({ databasePath: process.env.CUBE_DUCKDB_PATH }),
  dialectFactory: () => PostgresQuery,
  schemaPath: 'model',
  apiSecret: 'bench',
  checkAuth: () => {},
  devServer: false,
  cacheAndQueueDriver: 'memory',
  telemetry: false,
  logger: (message, params) => { if (process.env.CUBE_LOG) console.log(message, JSON.stringify(params)); },
});
core.initApp(app).then(() => {
  app.listen(Number(process.env.CUBE_PORT), '127.0.0.1', () => console.log('cube ready'));
});
