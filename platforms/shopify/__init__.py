"""The Shopify connector: stores synced through the Admin GraphQL API (docs/shopify.md).

Modules by role: settings (knobs and the sealed connection), client (HTTP, throttling,
retries), throttle (the cost bucket), queries (GraphQL documents), bulk (bulk operation life
cycle), jsonl (bulk results back into records), backfill (bulk windows), incremental
(paged updated_at queries, deletions), children (complete child connections), mapping
(records -> warehouse rows), cursor, job, connector.
"""
