"""Record ids: opaque, URL-safe, unique across every store and account.

A platform id such as Shopify's `gid://shopify/Order/450789469` is not URL-safe, so a record
id is built from the store id, a short code of the record's type and the platform's own id:
`st_k3x9...-o450789469`. Ids that are not plain digits are base64url-encoded.
"""

from __future__ import annotations

import base64
import re

_GID = re.compile(r"^gid://[^/]+/(?P<type>[A-Za-z]+)/(?P<local>[^/?]+)")
_TYPE_CODES = {
    "Order": "o",
    "LineItem": "l",
    "Refund": "r",
    "RefundLineItem": "rl",
    "Customer": "c",
    "Product": "p",
    "ProductVariant": "v",
    "DraftOrder": "d",
}


def record_id(store_id: str, platform_id: str) -> str:
    """The Quarry id of `platform_id` (a gid, or a bare id) in store `store_id`."""
    match = _GID.match(platform_id)
    if match:
        code = _TYPE_CODES.get(match["type"], match["type"].lower())
        local = match["local"]
    else:
        code, local = "x", platform_id
    if not local.isdigit():
        local = "b" + base64.urlsafe_b64encode(local.encode()).decode().rstrip("=")
    return f"{store_id}-{code}{local}"


def gid(type_name: str, local_id: int | str, platform: str = "shopify") -> str:
    """A platform global id, e.g. gid("Order", 1001) -> gid://shopify/Order/1001."""
    return f"gid://{platform}/{type_name}/{local_id}"
