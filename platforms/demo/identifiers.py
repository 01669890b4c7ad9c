"""Platform ids (gid://demo/Order/17) and Quarry record ids of whole columns at once, built
exactly as platforms.ids builds one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.ids import gid, record_id

PLATFORM = "demo"


def _numbers(local_ids: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(np.asarray(local_ids, dtype=np.int64)), pa.string())


def gids(type_name: str, local_ids: np.ndarray) -> pa.Array:
    """gid://demo/<type_name>/<n> for each n."""
    prefix = gid(type_name, "", platform=PLATFORM)
    return pc.binary_join_element_wise(prefix, _numbers(local_ids), "")


def record_ids(store_id: str, type_name: str, local_ids: np.ndarray) -> pa.Array:
    """platforms.ids.record_id(store_id, gid(type_name, n, platform='demo')) for each n."""
    # Numeric local ids are appended verbatim, so the id of 0 minus its "0" is the prefix.
    prefix = record_id(store_id, gid(type_name, 0, platform=PLATFORM))[:-1]
    return pc.binary_join_element_wise(prefix, _numbers(local_ids), "")


def joined(*parts: pa.Array | str, separator: str = "") -> pa.Array:
    """Element-wise concatenation of string columns and constants."""
    return pc.binary_join_element_wise(*parts, separator)
