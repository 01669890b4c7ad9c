"""Rollups: sums of the sales facts per store and time bucket that the query engine answers
from by itself when they give the facts' answer exactly (docs/architecture.md, "Rollups").

- definitions: the rollup sets (grain, dimensions, the sums and counts a row keeps);
- build: their rows, written in the sales step's transaction and rebuilt from the facts;
- exactness: whether a query's zone and windows let a set's buckets answer it;
- planner: per query, the set that answers it, or the facts.
"""
