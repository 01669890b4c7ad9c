"""A fake Shopify store on loopback: the parts of the Admin GraphQL API the connector uses.

A real HTTP server (Starlette under uvicorn, in a thread) serving
POST /admin/api/{version}/graphql.json with X-Shopify-Access-Token checked, and the bulk
result files at GET /bulk/{name}. It does not parse GraphQL: it recognises the connector's
named operations (QuarryOrderPage, QuarryBulkRun, ...) and reads their variables, the
`first:` sizes written in them, and the search string of a bulk query. Responses follow
the documented shapes: `data`, `errors` with `extensions.code`, and `extensions.cost` with a
leaky-bucket `throttleStatus`.

The 2026 protocol: the client-credentials token endpoint (POST /admin/oauth/access_token,
form-encoded) issuing tokens that expire after `token_lifetime` seconds; up to five bulk
query operations running at once from API 2026-01 (one before), read by
`bulkOperation(id:)` (2026-01+) or `node(id:)`, listed by `bulkOperations`; `rootObjectCount`
and `objectCount`; count queries with a search filter and `precision`; Order events for
refunds and fulfillments; webhook subscriptions.

Knobs for tests: `inject` (next responses: "429", "500", "throttled"), `bulk_plan`
(behaviour of the next bulk operations, e.g. "drop:1" serves a file missing one parent
while rootObjectCount still counts it), `drop_pages` (paged queries leave out this many
records while counts still include them), `bulk_polls_running`, the bucket size and
restore rate, `revoke_tokens()`, and helpers to update, delete and refund records.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

FIXTURES = Path(__file__).parent / "fixtures"
TOKEN = "shpat_fake_0123456789abcdef"
CLIENT_ID = "quarry-fake-client-id"
CLIENT_SECRET = "quarry-fake-client-secret"
VERSIONS = ("2025-07", "2025-10", "2026-01", "2026-04", "2026-07", "2026-10")
RUNNING_STATES = ("CREATED", "RUNNING", "CANCELING")
MAX_QUERY_COST = 1000


@dataclass(frozen=True)
class Root:
    name: str  # QueryRoot connection
    type_name: str
    children: dict[str, str]  # child connection field -> child type
    node_cost: int
    child_cost: int
    count_field: str
    subject: str


ROOTS = {
    r.type_name: r
    for r in (
        Root("orders", "Order", {"lineItems": "LineItem"}, 30, 11, "ordersCount", "ORDER"),
        Root("customers", "Customer", {}, 5, 0, "customersCount", "CUSTOMER"),
        Root(
            "products", "Product", {"variants": "ProductVariant"}, 1, 1, "productsCount", "PRODUCT"
        ),
        Root(
            "draftOrders",
            "DraftOrder",
            {"lineItems": "DraftOrderLineItem"},
            10,
            1,
            "draftOrdersCount",
            "DRAFT_ORDER",
        ),
    )
}
BY_ROOT = {r.name: r for r in ROOTS.values()}
REFUND_CHILDREN = ("refundLineItems", "refundShippingLines")
# Points per child node: each object, money bag and money inside costs 1.
CHILD_COSTS = {
    ("Order", "lineItems"): 11,
    ("Product", "variants"): 1,
    ("DraftOrder", "lineItems"): 1,
    ("Refund", "refundLineItems"): 6,
    ("Refund", "refundShippingLines"): 5,
}


def gid_number(gid: str) -> int:
    return int(gid.rsplit("/", 1)[-1])


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def as_lists(record: dict[str, Any]) -> dict[str, Any]:
    """A fixture node with every {"nodes": [...]} connection turned into a plain list."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and set(value) <= {"nodes", "pageInfo"} and "nodes" in value:
            out[key] = [as_lists(v) for v in value["nodes"]]
        elif isinstance(value, list):
            out[key] = [as_lists(v) if isinstance(v, dict) else v for v in value]
        else:
            out[key] = value
    return out


_TERM = re.compile(r"^(\w+):(>=|<=|>|<)?'?([^']*)'?$")
_FIELDS = {"created_at": "createdAt", "updated_at": "updatedAt", "subject_type": "subjectType"}


def matches(record: dict[str, Any], search: str | None) -> bool:
    """Shopify search syntax, the parts we use: `field:>='time' AND id:>123 AND a:b`."""
    if not search:
        return True
    for term in search.split(" AND "):
        match = _TERM.match(term.strip())
        if not match:
            raise ValueError(f"fake cannot parse search term {term!r}")
        name, op, raw = match.groups()
        if name == "id":
            left: Any = gid_number(record["id"])
            right: Any = int(raw)
        elif name in ("created_at", "updated_at"):
            left, right = parse_time(record[_FIELDS[name]]), parse_time(raw)
        else:
            left = str(record.get(_FIELDS.get(name, name), "")).lower()
            right = raw.lower()
        ok = {
            None: left == right,
            ">=": left >= right,
            "<=": left <= right,
            ">": left > right,
            "<": left < right,
        }[op]
        if not ok:
            return False
    return True


class BadCursor(ValueError):
    """A pagination cursor the fake did not issue."""


def encode_cursor(key: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def page(
    items: list[dict[str, Any]], first: int, after: str | None, key: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ordered = sorted(items, key=key)
    if after:
        try:
            after_key = json.loads(base64.urlsafe_b64decode(after.encode()))
        except ValueError as exc:
            raise BadCursor(after) from exc
        ordered = [i for i in ordered if list(key(i)) > after_key]
    chunk = ordered[:first]
    end = encode_cursor(list(key(chunk[-1]))) if chunk else after
    return chunk, {"hasNextPage": len(ordered) > first, "endCursor": end}


def by_updated(record: dict[str, Any]) -> tuple[str, int]:
    return (parse_time(record["updatedAt"]).isoformat(), gid_number(record["id"]))


def by_id(record: dict[str, Any]) -> tuple[int]:
    return (gid_number(record["id"]),)


def connection(items: list[dict[str, Any]], first: int, after: str | None) -> dict[str, Any]:
    chunk, info = page(items, first, after, by_id)
    return {"pageInfo": info, "nodes": copy.deepcopy(chunk)}


@dataclass
class BulkOp:
    id: str
    query: str
    root: Root
    behaviour: str
    lines: list[str]
    roots: int
    polls: int = 0
    status: str = "CREATED"
    cancelled: bool = False
    url_polls: int = 0


@dataclass
class FakeShopify:
    """The store's state and the API's behaviour; thread-safe behind one lock."""

    token: str = TOKEN
    bucket_max: float = 2000.0
    restore_rate: float = 100.0
    bulk_polls_running: int = 1
    inject: list[str] = field(default_factory=list)
    retry_after: str = "0.2"
    bulk_plan: list[str] = field(default_factory=list)
    base_url: str = ""
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    token_lifetime: float = 86399.0
    drop_pages: int = 0
    # Records bulk exports leave out altogether (rootObjectCount agrees); counts include them.
    hidden_from_bulk: set[str] = field(default_factory=set)
    # Bulk queries one app may run at once from 2026-01, and the userErrors code of a
    # refusal when they are all taken (BulkOperationUserErrorCode: LIMIT_REACHED or
    # OPERATION_IN_PROGRESS; which one Shopify sends at the limit is not documented).
    bulk_slots: int = 5
    bulk_busy_code: str = "OPERATION_IN_PROGRESS"

    def __post_init__(self) -> None:
        data = json.loads((FIXTURES / "shop.json").read_text())
        self.shop: dict[str, Any] = data["shop"]
        self.records: dict[str, list[dict[str, Any]]] = {
            r.name: [as_lists(x) for x in data[r.name]] for r in ROOTS.values()
        }
        self.events: list[dict[str, Any]] = []
        self.ops: dict[str, BulkOp] = {}
        self.lock = threading.Lock()
        self.available = self.bucket_max
        self.bucket_at = self._now()
        self.log: list[dict[str, Any]] = []
        self.downloads: list[dict[str, str]] = []
        self.issued: dict[str, float] = {}  # client-credentials token -> expiry (monotonic)
        self.token_requests: list[dict[str, str]] = []
        self.max_running = 0  # most bulk operations seen running at once
        self.webhook_subscriptions: list[dict[str, Any]] = []

    # -- test helpers --------------------------------------------------------------------

    def find(self, gid: str) -> dict[str, Any] | None:
        for items in self.records.values():
            for item in items:
                if item["id"] == gid:
                    return item
        return None

    def update(self, gid: str, updated_at: str, **changes: Any) -> None:
        with self.lock:
            record = self.find(gid)
            assert record is not None, gid
            record.update(changes, updatedAt=updated_at)

    def delete(self, gid: str, at: str) -> None:
        with self.lock:
            type_name = gid.split("/")[3]
            root = ROOTS[type_name]
            self.records[root.name] = [r for r in self.records[root.name] if r["id"] != gid]
            self._event("destroy", at, gid, root.subject)

    def add(self, root: str, record: dict[str, Any]) -> None:
        with self.lock:
            self.records[root].append(as_lists(record))

    def refund(self, order_gid: str, refund: dict[str, Any], at: str) -> None:
        """A refund on an order that leaves the order's updatedAt alone, recorded as an
        Order event (`refund_success`) the way Shopify's event log records it."""
        with self.lock:
            order = self.find(order_gid)
            assert order is not None, order_gid
            order.setdefault("refunds", []).append(as_lists(refund))
            self._event("refund_success", at, order_gid, "ORDER")

    def _event(self, action: str, at: str, subject: str, subject_type: str) -> None:
        n = len(self.events) + 1
        self.events.append(
            {
                "id": f"gid://shopify/BasicEvent/{90000 + n}",
                "action": action,
                "createdAt": at,
                "subjectId": subject,
                "subjectType": subject_type,
            }
        )

    def revoke_tokens(self) -> None:
        """Every client-credentials token issued so far stops working (as after a secret
        rotation): the next call with one gets 401."""
        with self.lock:
            self.issued.clear()

    def grant(self, form: dict[str, str]) -> Response:
        """POST /admin/oauth/access_token with grant_type=client_credentials."""
        with self.lock:
            self.token_requests.append(dict(form))
            if form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            if form.get("client_id") != self.client_id or not secrets.compare_digest(
                form.get("client_secret", ""), self.client_secret
            ):
                return JSONResponse(
                    {
                        "error": "invalid_client",
                        "error_description": "Client credentials are invalid",
                    },
                    status_code=400,
                )
            token = f"shpat_cc_{secrets.token_hex(12)}"
            self.issued[token] = time.monotonic() + self.token_lifetime
            return JSONResponse(
                {
                    "access_token": token,
                    "scope": "read_orders,read_all_orders,read_customers,read_products,"
                    "read_draft_orders",
                    "expires_in": int(self.token_lifetime),
                }
            )

    def _token_ok(self, token: str | None) -> bool:
        if token is None:
            return False
        if token == self.token:
            return True
        expires = self.issued.get(token)
        return expires is not None and time.monotonic() < expires

    def operations(self) -> list[str]:
        return [entry["operation"] for entry in self.log]

    # -- bucket --------------------------------------------------------------------------

    @staticmethod
    def _now() -> float:
        import time

        return time.monotonic()

    def _refill(self) -> None:
        now = self._now()
        self.available = min(
            self.bucket_max, self.available + (now - self.bucket_at) * self.restore_rate
        )
        self.bucket_at = now

    def _cost(self, requested: int, actual: int | None) -> dict[str, Any]:
        return {
            "requestedQueryCost": requested,
            "actualQueryCost": actual,
            "throttleStatus": {
                "maximumAvailable": self.bucket_max,
                "currentlyAvailable": round(self.available, 2),
                "restoreRate": self.restore_rate,
            },
        }

    # -- GraphQL -------------------------------------------------------------------------

    def handle(self, version: str, token: str | None, body: dict[str, Any]) -> Response:
        with self.lock:
            valid = self._token_ok(token)
        if not valid:
            return JSONResponse(
                {
                    "errors": "[API] Invalid API key or access token (unrecognized login or "
                    "wrong password)"
                },
                status_code=401,
            )
        if version not in VERSIONS:
            return JSONResponse({"errors": "Not Found"}, status_code=404)
        document = body["query"]
        variables = body.get("variables") or {}
        operation = re.match(r"^\s*(?:query|mutation)\s+(\w+)", document).group(1)
        with self.lock:
            self._refill()
            entry = {"operation": operation, "variables": variables, "available": self.available}
            self.log.append(entry)
            requested = self._requested(operation, document, variables)
            entry["requested"] = requested
            if self.inject:
                failure = self.inject.pop(0)
                entry["injected"] = failure
                if failure == "429":
                    return JSONResponse(
                        {"errors": "Exceeded 2 calls per second for api client."},
                        status_code=429,
                        headers={"Retry-After": self.retry_after},
                    )
                if failure == "500":
                    return JSONResponse({"errors": "Internal error"}, status_code=500)
                if failure == "throttled":
                    return self._throttled(requested)
            if requested > MAX_QUERY_COST:
                return JSONResponse(
                    {
                        "errors": [
                            {
                                "message": f"Query cost is {requested}, which exceeds the "
                                f"single query max cost limit ({MAX_QUERY_COST}).",
                                "extensions": {
                                    "code": "MAX_COST_EXCEEDED",
                                    "cost": requested,
                                    "maxCost": MAX_QUERY_COST,
                                },
                            }
                        ]
                    }
                )
            if requested > self.available:
                entry["throttled"] = True
                return self._throttled(requested)
            try:
                data = self._data(operation, document, variables, version)
            except BadCursor:
                return JSONResponse(
                    {
                        "errors": [
                            {
                                "message": "Invalid cursor for current pagination.",
                                "extensions": {"code": "BAD_REQUEST"},
                            }
                        ]
                    }
                )
            actual = max(1, requested // 4)
            self.available -= actual
            return JSONResponse(
                {"data": data, "extensions": {"cost": self._cost(requested, actual)}}
            )

    def _throttled(self, requested: int) -> JSONResponse:
        return JSONResponse(
            {
                "errors": [
                    {
                        "message": "Throttled",
                        "extensions": {
                            "code": "THROTTLED",
                            "documentation": "https://shopify.dev/api/usage/rate-limits",
                        },
                    }
                ],
                "extensions": {"cost": self._cost(requested, None)},
            }
        )

    def _requested(self, operation: str, document: str, variables: dict[str, Any]) -> int:
        if operation.endswith("Page"):
            root = ROOTS[operation[len("Quarry") : -len("Page")]]
            per_node = root.node_cost + sum(
                2 + int(n) * root.child_cost
                for n in re.findall(r"(?:lineItems|variants)\(first: (\d+)\)", document)
            )
            return 2 + int(variables["first"]) * per_node
        if operation.startswith("QuarryMore"):
            parent, name, first = re.search(
                r"\.\.\. on (\w+) \{ (\w+)\(first: (\d+)", document
            ).groups()
            return 2 + int(first) * CHILD_COSTS[(parent, name)]
        if operation == "QuarryRefundDetails":
            return len(variables["ids"]) * (1 + 2 + 25 * 6 + 2 + 10 * 5)
        if operation in ("QuarryDeletions", "QuarryEvents"):
            return 2 + int(variables["first"])
        return 10

    def _probe(self, variables: dict[str, Any]) -> dict[str, Any]:
        """Each `<dataset>_updated` alias: the first record of that root matching its
        search; each `<dataset>_events`: the first matching event."""
        roots = {root.name: root for root in ROOTS.values()}
        data: dict[str, Any] = {}
        for name, search in variables.items():
            dataset, _, kind = name.rpartition("_")
            if kind == "events":
                found = [e for e in self.events if matches(e, search)]
            else:
                root = roots["draftOrders" if dataset == "draft_orders" else dataset]
                found = [r for r in self.records[root.name] if matches(r, search)]
            data[name] = {"nodes": [{"id": found[0]["id"]}] if found else []}
        return data

    def _data(
        self, operation: str, document: str, variables: dict[str, Any], version: str
    ) -> dict[str, Any]:
        if operation == "QuarryShop":
            return {"shop": dict(self.shop)}
        if operation == "QuarryProbe":
            return self._probe(variables)
        if operation.endswith("Page"):
            return self._page(ROOTS[operation[len("Quarry") : -len("Page")]], document, variables)
        if operation.endswith("Nodes"):
            root = ROOTS[operation[len("Quarry") : -len("Nodes")]]
            nodes = [self.find(gid) for gid in variables["ids"]]
            return {
                "nodes": [
                    self._shape(root, n, document)
                    if n and n["id"].split("/")[3] == root.type_name
                    else None
                    for n in nodes
                ]
            }
        if operation.endswith("Count"):
            root = ROOTS[operation[len("Quarry") : -len("Count")]]
            search = variables.get("query")
            count = sum(1 for r in self.records[root.name] if matches(r, search))
            return {root.count_field: {"count": count, "precision": "EXACT"}}
        if operation == "QuarryWebhookSubscribe":
            sub = {
                "id": f"gid://shopify/WebhookSubscription/{len(self.webhook_subscriptions) + 1}",
                "topic": variables["topic"],
                "uri": variables["uri"],
            }
            self.webhook_subscriptions.append(sub)
            return {"webhookSubscriptionCreate": {"webhookSubscription": sub, "userErrors": []}}
        if operation.startswith("QuarryMore"):
            return self._more(document, variables)
        if operation == "QuarryRefundDetails":
            return self._refund_details(variables["ids"])
        if operation in ("QuarryDeletions", "QuarryEvents"):
            chunk, info = page(
                [e for e in self.events if matches(e, variables["query"])],
                int(variables["first"]),
                variables.get("after"),
                lambda e: (e["createdAt"], gid_number(e["id"])),
            )
            return {"events": {"pageInfo": info, "nodes": copy.deepcopy(chunk)}}
        if operation == "QuarryBulkRun":
            return self._bulk_run(variables["query"], version)
        if operation == "QuarryBulkStatus":
            return {"node": self._bulk_status(variables["id"])}
        if operation == "QuarryBulkOperation":
            if version < "2026-01":
                raise AssertionError("bulkOperation(id:) does not exist before 2026-01")
            return {"bulkOperation": self._bulk_status(variables["id"])}
        if operation == "QuarryBulkOperations":
            if version < "2026-01":
                raise AssertionError("bulkOperations does not exist before 2026-01")
            wanted = str(variables.get("query") or "")
            ops = [
                {"id": o.id, "status": o.status, "query": o.query}
                for o in reversed(list(self.ops.values()))
                if "status:running" not in wanted or o.status in RUNNING_STATES
            ]
            return {"bulkOperations": {"nodes": ops[: int(variables["first"])]}}
        if operation == "QuarryBulkCancel":
            op = self.ops[variables["id"]]
            op.cancelled = True
            op.status = "CANCELING"
            return {
                "bulkOperationCancel": {
                    "bulkOperation": {"id": op.id, "status": op.status},
                    "userErrors": [],
                }
            }
        if operation == "QuarryCurrentBulk":
            if not self.ops:
                return {"currentBulkOperation": None}
            op = list(self.ops.values())[-1]
            return {"currentBulkOperation": {"id": op.id, "status": op.status, "query": op.query}}
        raise AssertionError(f"fake does not know {operation}")

    def _shape(self, root: Root, record: dict[str, Any], document: str) -> dict[str, Any]:
        """A stored record as a paged query returns it: first child pages, shallow refunds."""
        node = copy.deepcopy(record)
        for child in root.children:
            first = int(re.search(rf"{child}\(first: (\d+)\)", document).group(1))
            node[child] = connection(record[child], first, None)
        for refund in node.get("refunds") or []:
            for name in REFUND_CHILDREN:
                refund.pop(name, None)
        return node

    def _page(self, root: Root, document: str, variables: dict[str, Any]) -> dict[str, Any]:
        items = [r for r in self.records[root.name] if matches(r, variables.get("query"))]
        chunk, info = page(items, int(variables["first"]), variables.get("after"), by_updated)
        if self.drop_pages and chunk:
            # A search index that lost records: the page skips them, counts do not.
            self.drop_pages -= 1
            chunk = chunk[1:]
        return {
            root.name: {"pageInfo": info, "nodes": [self._shape(root, r, document) for r in chunk]}
        }

    def _refund(self, gid: str) -> dict[str, Any] | None:
        for order in self.records["orders"]:
            for refund in order.get("refunds") or []:
                if refund["id"] == gid:
                    return refund
        return None

    def _more(self, document: str, variables: dict[str, Any]) -> dict[str, Any]:
        field_name, first = re.search(r"\{ (\w+)\(first: (\d+), after", document).groups()
        parent = self._refund(variables["id"]) or self.find(variables["id"])
        if parent is None:
            return {"node": None}
        return {
            "node": {field_name: connection(parent[field_name], int(first), variables.get("after"))}
        }

    def _refund_details(self, ids: list[str]) -> dict[str, Any]:
        nodes = []
        for gid in ids:
            refund = self._refund(gid)
            if refund is None:
                nodes.append(None)
                continue
            nodes.append(
                {
                    "id": gid,
                    "refundLineItems": connection(refund["refundLineItems"], 25, None),
                    "refundShippingLines": connection(refund["refundShippingLines"], 10, None),
                }
            )
        return {"nodes": nodes}

    # -- bulk operations -----------------------------------------------------------------

    def _bulk_run(self, query: str, version: str = "2026-10") -> dict[str, Any]:
        running = [o for o in self.ops.values() if o.status in RUNNING_STATES]
        # From 2026-01 an app runs up to five bulk queries per shop at once, before one.
        allowed = self.bulk_slots if version >= "2026-01" else 1
        if len(running) >= allowed:
            limit = self.bulk_busy_code == "LIMIT_REACHED"
            message = (
                "Bulk operations limit reached. Please try again later."
                if limit
                else "A bulk query operation for this app and shop is already in progress: "
                f"{running[0].id}."
            )
            return {
                "bulkOperationRunQuery": {
                    "bulkOperation": None,
                    "userErrors": [
                        {"field": None, "code": self.bulk_busy_code, "message": message}
                    ],
                }
            }
        match = re.match(r'^\{ (\w+)\(query: "([^"]*)", sortKey: ID\)', query)
        assert match, query
        root = BY_ROOT[match.group(1)]
        records = sorted(
            (
                r
                for r in self.records[root.name]
                if matches(r, match.group(2)) and r["id"] not in self.hidden_from_bulk
            ),
            key=by_id,
        )
        n = len(self.ops) + 1
        op_id = f"gid://shopify/BulkOperation/{n}"
        behaviour = self.bulk_plan.pop(0) if self.bulk_plan else "complete"
        lines, roots = self._jsonl(root, records, behaviour)
        self.ops[op_id] = BulkOp(op_id, query, root, behaviour, lines, roots)
        self.max_running = max(self.max_running, len(running) + 1)
        return {
            "bulkOperationRunQuery": {
                "bulkOperation": {"id": op_id, "status": "CREATED"},
                "userErrors": [],
            }
        }

    def _jsonl(
        self, root: Root, records: list[dict[str, Any]], behaviour: str
    ) -> tuple[list[str], int]:
        """Parents first, then every child line with its __parentId (ungrouped output).
        `timeout_partial:K` keeps K complete parents plus one without its children."""
        keep = len(records)
        roots = len(records)
        if behaviour.startswith("timeout_partial:"):
            keep = int(behaviour.split(":")[1])
            records = records[: keep + 1]
            roots = len(records)
        if behaviour.startswith("drop:"):
            # The file loses parents that rootObjectCount still counts.
            records = records[int(behaviour.split(":")[1]) :]
            keep = len(records)
        parents, children = [], []
        for i, record in enumerate(records):
            node = copy.deepcopy(record)
            for child in root.children:
                node.pop(child)
                if i < keep:
                    children.extend({**c, "__parentId": record["id"]} for c in record[child])
            for refund in node.get("refunds") or []:
                for name in REFUND_CHILDREN:
                    refund.pop(name, None)
            parents.append(node)
        return [json.dumps(x) for x in parents + children], roots

    def _bulk_status(self, op_id: str) -> dict[str, Any] | None:
        op = self.ops.get(op_id)
        if op is None:
            return None
        op.polls += 1
        if op.status in ("CREATED", "RUNNING", "CANCELING"):
            if op.cancelled:
                op.status = "CANCELED" if op.status == "CANCELING" else "CANCELING"
            elif op.behaviour == "hang" or op.polls <= self.bulk_polls_running:
                op.status = "RUNNING"
            else:
                op.status = (
                    "FAILED"
                    if op.behaviour.split(":")[0]
                    in ("timeout_partial", "ise_no_partial", "access_denied")
                    else "COMPLETED"
                )
        node: dict[str, Any] = {
            "id": op.id,
            "status": op.status,
            "errorCode": None,
            "objectCount": str(len(op.lines)),
            "rootObjectCount": str(op.roots),
            "url": None,
            "partialDataUrl": None,
            "createdAt": "2024-05-01T00:00:00Z",
        }
        number = gid_number(op.id)
        if op.status == "COMPLETED":
            op.url_polls += 1
            no_url = op.behaviour == "no_url" or (op.behaviour == "late_url" and op.url_polls == 1)
            if not no_url and op.roots:
                node["url"] = f"{self.base_url}/bulk/{number}.jsonl"
        elif op.status == "FAILED":
            code = {
                "timeout_partial": "TIMEOUT",
                "ise_no_partial": "INTERNAL_SERVER_ERROR",
                "access_denied": "ACCESS_DENIED",
            }[op.behaviour.split(":")[0]]
            node["errorCode"] = code
            if code == "TIMEOUT":
                node["partialDataUrl"] = f"{self.base_url}/bulk/{number}-partial.jsonl"
        return node

    def bulk_file(self, name: str, headers: dict[str, str]) -> Response:
        with self.lock:
            self.downloads.append(headers)
            number = int(name.split(".")[0].split("-")[0])
            op = self.ops.get(f"gid://shopify/BulkOperation/{number}")
            if op is None:
                return PlainTextResponse("not found", status_code=404)
            return PlainTextResponse("\n".join(op.lines) + "\n", media_type="application/jsonl")


class FakeShopifyServer:
    """Runs a FakeShopify on 127.0.0.1 on a free port; `url` is its base address."""

    def __init__(self, shop: FakeShopify | None = None) -> None:
        self.shop = shop or FakeShopify()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this: without it every keep-alive response waits
        # ~40 ms for a delayed ACK (Nagle), which makes the suite several times slower.
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.shop.base_url = self.url
        self._server = uvicorn.Server(
            uvicorn.Config(self._app(), log_level="warning", lifespan="off")
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _app(self) -> Starlette:
        shop = self.shop

        async def graphql(request: Request) -> Response:
            body = await request.json()
            return shop.handle(
                request.path_params["version"],
                request.headers.get("x-shopify-access-token"),
                body,
            )

        async def bulk_file(request: Request) -> Response:
            return shop.bulk_file(request.path_params["name"], dict(request.headers))

        async def access_token(request: Request) -> Response:
            # Form-encoded, as Shopify's token endpoint takes it (parsed here without
            # python-multipart, which Starlette's request.form() would need).
            form = dict(parse_qsl((await request.body()).decode()))
            return shop.grant(form)

        return Starlette(
            routes=[
                Route("/admin/api/{version}/graphql.json", graphql, methods=["POST"]),
                Route("/bulk/{name}", bulk_file, methods=["GET"]),
                Route("/admin/oauth/access_token", access_token, methods=["POST"]),
            ]
        )

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._socket]))

    def __enter__(self) -> FakeShopifyServer:
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return self
            threading.Event().wait(0.01)
        raise RuntimeError("fake Shopify did not start")

    def __exit__(self, *_exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
