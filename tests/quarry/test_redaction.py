"""The one redaction mechanism: every record of the process, whatever logs it."""

from __future__ import annotations

import logging

import pytest

from api.logs import mask_keys
from quarry.redaction import redacting


class Request:
    def __init__(self, token: str) -> None:
        self.token = token

    def __str__(self) -> str:
        return f"<Request Authorization: Token {self.token}>"


def test_registered_secrets_are_masked_in_messages_and_arguments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("some.library.deep.child")
    with caplog.at_level(logging.DEBUG), redacting(["s3cr3t-password"]) as redactor:
        redactor.add("later-token-123")
        logger.debug("login with s3cr3t-password")
        logger.debug("sending %s to %s", Request("later-token-123"), "host", extra={})
        logger.debug("port %d", 2121)
    logger.debug("after the block: s3cr3t-password")
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "login with ***"
    assert messages[1] == "sending <Request Authorization: Token ***> to host"
    assert messages[2] == "port 2121"
    assert "later-token-123" not in "\n".join(messages)


def test_api_keys_keep_their_prefix_and_arguments_keep_their_shape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mask_keys()
    key = "qk_" + "a1B2c3" * 8
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1", "GET", f"/v1/orders?api_key={key}", "1.1", 401
        )
    record = caplog.records[-1]
    # uvicorn's access formatter unpacks the argument tuple: it stays a five-tuple.
    assert isinstance(record.args, tuple) and len(record.args) == 5
    assert record.args[2] == "/v1/orders?api_key=qk_***"
    assert record.args[4] == 401
    assert key[3:] not in record.getMessage()
    logging.getLogger("elsewhere").warning("Authorization: Bearer %s", key)
    assert caplog.records[-1].getMessage() == "Authorization: Bearer qk_***"


def test_a_traceback_is_masked_like_the_message(caplog: pytest.LogCaptureFixture) -> None:
    # An exception's message often quotes what failed: a URL with a token, a login.
    with caplog.at_level(logging.ERROR), redacting(["s3cr3t-password"]):
        try:
            raise OSError("login refused for s3cr3t-password")
        except OSError:
            logging.getLogger("destinations.ftp").exception("delivery failed")
    assert "OSError: login refused for ***" in caplog.text
    assert "s3cr3t-password" not in caplog.text
