"""The console in process (httpx over ASGI, as the API tests), on an account of its own in
the API tests' world: two stores, keys of each kind. A person's steps are helpers here:
sign in (the form's token, then the key), read a page's CSRF token, post a form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urlencode

import httpx
import pytest
from anyio.from_thread import BlockingPortal
from fastapi import FastAPI

from registry.accounts import create_account, create_store
from registry.keys import create_key
from tests.api.conftest import Client
from tests.api.world import World

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class ConsoleAccount:
    account_id: str
    stores: list[str]
    keys: dict[str, str] = field(default_factory=dict)
    key_ids: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="session")
def console_account(world: World) -> ConsoleAccount:
    with world.registry.session() as session:
        account = create_account(
            session, name="Console Co", currency="USD", timezone="Europe/Berlin"
        )
        made = ConsoleAccount(account.id, [])
        for store_id, name in (("st_k1", "Kiel"), ("st_k2", "Köln")):
            create_store(
                session,
                account_id=account.id,
                name=name,
                domain=f"{store_id}.example.com",
                currency="USD",
                timezone="UTC",
                platform="demo",
                store_id=store_id,
            )
            made.stores.append(store_id)
        for name, scopes, stores in (
            ("all", ["read_data", "exports"], None),
            ("exports", ["exports"], None),
            ("read", ["read_data"], None),
            ("one", ["read_data", "exports"], ["st_k1"]),
            ("to_revoke", ["exports"], None),
        ):
            issued = create_key(session, account_id=account.id, scopes=scopes, store_ids=stores)
            made.keys[name] = issued.secret
            made.key_ids[name] = issued.row.id
    return made


def csrf_of(page: httpx.Response) -> str:
    match = _TOKEN.search(page.text)
    assert match, page.text[:2000]
    return match[1]


class Browser(Client):
    """A client with its own cookie jar, stepping through pages as a person does."""

    def sign_in(self, key: str) -> httpx.Response:
        page = self.get("/console/sign-in")
        return self.request(
            "POST", "/console/sign-in", data={"api_key": key, "csrf_token": csrf_of(page)}
        )

    def submit(self, path: str, pairs: list[tuple[str, str]]) -> httpx.Response:
        """POST the form fields `pairs` (names repeat, order kept), as a browser does."""
        return self.request(
            "POST",
            path,
            content=urlencode(pairs).encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )


@pytest.fixture
def browser(app: FastAPI, portal: BlockingPortal) -> Iterator[Browser]:
    made = Browser(app, portal)
    yield made
    made.close()


@pytest.fixture
def make_browser(app: FastAPI, portal: BlockingPortal) -> Iterator[object]:
    made: list[Browser] = []

    def build() -> Browser:
        made.append(Browser(app, portal))
        return made[-1]

    yield build
    for one in made:
        one.close()


class _FormReader(HTMLParser):
    """The (name, value) pairs a browser submits for a form as it is rendered: checked
    boxes, selected options, text inputs and textareas; not buttons."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._select_first: tuple[str, str] | None = None
        self._select_chosen = False
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {k: v or "" for k, v in attrs}
        if tag == "form" and given.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        name = given.get("name")
        if tag == "input" and name and "disabled" not in given:
            kind = given.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in given:
                    self.pairs.append((name, given.get("value", "on")))
            elif kind not in ("submit", "button"):
                self.pairs.append((name, given.get("value", "")))
        elif tag == "select" and name:
            self._select, self._select_first, self._select_chosen = name, None, False
        elif tag == "option" and self._select is not None:
            value = given.get("value", "")
            if self._select_first is None:
                self._select_first = (self._select, value)
            if "selected" in given:
                self.pairs.append((self._select, value))
                self._select_chosen = True
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        if tag == "select" and self._select is not None:
            if not self._select_chosen and self._select_first is not None:
                self.pairs.append(self._select_first)
            self._select = None
        if tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            self.pairs.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)


def form_fields(page: httpx.Response, form_id: str) -> list[tuple[str, str]]:
    """What submitting form `form_id` of `page` unchanged would send."""
    reader = _FormReader(form_id)
    reader.feed(page.text)
    assert reader.pairs, f"no form {form_id!r} on the page"
    return reader.pairs
