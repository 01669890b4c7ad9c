"""A name a clause writes -> the catalog field it stands for, or a diagnostic saying why
there is none (a field ShopifyQL has that Quarry cannot answer, or a misspelling)."""

from __future__ import annotations

from warehouse.catalog import Dataset, Field
from warehouse.query import ast
from warehouse.query.checker.state import State
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.fields import NOT_SYNCED, field_names, lookup


def find_field(
    st: State, name: ast.Name, ds: Dataset, *, dims_only: bool = False, extra: tuple[str, ...] = ()
) -> Field | None:
    """The field `name` stands for in `ds`; None once the diagnostic is recorded. extra:
    other names the clause takes, offered by did-you-mean too."""
    field = lookup(ds, name.name)
    if field is None and name.name in NOT_SYNCED.get(ds.name, {}):
        reason = NOT_SYNCED[ds.name][name.name]
        st.error(
            name.pos,
            f"{name.name} is a field of ShopifyQL's {ds.name} schema that Quarry cannot "
            f"answer: {reason}.",
        )
        return None
    if field is None:
        pool = [f.name for f in field_names(ds) if not dims_only or f.role == "dimension"]
        hint = did_you_mean(name.name, [*pool, *extra])
        st.error(name.pos, f"Unknown field '{name.name}' in {ds.name}.{hint}")
        return None
    if dims_only and field.role != "dimension":
        st.error(name.pos, f"{field.name} is a metric; GROUP BY takes dimensions.")
        return None
    return field
