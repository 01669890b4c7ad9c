"""The built-in demo commerce platform.

A seeded, vectorised generator of commerce data (orders with lines and refunds, customers,
products with variants, draft orders) for an account with several stores, kept as Parquet
files under QUARRY_HOME/demo/<account_id>/<store_id>/ and served by `DemoConnector` through
the same interface as a real platform. `quarry demo advance` moves its clock on: new orders,
updates to old ones and deletions, so incremental syncs have something to do.

Entry points: `seed.seed_demo`, `advance.advance_demo`, `connector.DemoConnector`,
`storage.load_table` (ground truth for tests), `hostile.HOSTILE_VALUES`.
"""
