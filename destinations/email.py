"""Email delivery with smtplib, over STARTTLS or implicit TLS only.

Files up to `attachment_max_bytes` (and within the server's advertised SIZE) are attached;
larger ones are replaced by a signed, expiring download link served by the API. Headers are
built only through email.message.EmailMessage, and every value that reaches a header (from,
to, cc, reply-to, subject) is checked for CR/LF when the configuration is applied, so a
configuration cannot add headers or recipients.

A message is all-or-nothing at the SMTP level (the server takes it only at the end of DATA),
which is this kind's "temporary name and rename". Retries of a job reuse one Message-ID, so
mail systems can recognise a duplicate if a retry follows a lost acknowledgement.
"""

from __future__ import annotations

import datetime as dt
import email.policy
import hashlib
import mimetypes
import re
import smtplib
import socket
from collections.abc import Callable
from email.errors import HeaderParseError
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any, ClassVar

from destinations import hosts, signed_links
from destinations.base import (
    BaseDestination,
    Delivery,
    DeliveryError,
    Receipt,
    call_quietly,
    describe_exception,
)
from destinations.fields import FieldReader
from destinations.tls import ca_certificate_error, tls_context, tls_failure
from quarry.settings import Settings

DEFAULT_SUBJECT = "Quarry export: {file_name}"
MAX_RECIPIENTS = 50
MIB = 1024 * 1024


def address_error(value: str) -> str | None:
    """Why `value` is not a single plain address (local@domain), or None."""
    if re.search(r"[\x00-\x1f\x7f]", value):
        return "must not contain line breaks or control characters"
    try:
        address = Address(addr_spec=value)
    except (HeaderParseError, ValueError, IndexError, TypeError):
        return "is not a valid email address"
    if address.addr_spec != value or not address.username or "." not in address.domain:
        return "is not a valid email address"
    return None


class _GuardedSMTP(smtplib.SMTP):
    """smtplib with the private-host guard on the connection it makes."""

    allow_private = False
    _host: str  # smtplib's, untyped: the TLS server name

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return hosts.connect(host, port, timeout=timeout, allow_private=self.allow_private)


class _GuardedSMTPSSL(smtplib.SMTP_SSL):
    allow_private = False
    _host: str

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock = hosts.connect(host, port, timeout=timeout, allow_private=self.allow_private)
        return self.context.wrap_socket(sock, server_hostname=self._host)


class EmailDestination(BaseDestination):
    kind: ClassVar[str] = "email"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        host = fields.host("host", allow_private=app_settings.allow_private_hosts)
        security = fields.choice("security", ("starttls", "tls"), default="starttls")
        port = fields.integer(
            "port", default=587 if security == "starttls" else 465, minimum=1, maximum=65535
        )
        ca_certificate = fields.text("ca_certificate", max_length=20_000, multiline=True)
        from_address = fields.text("from_address", required=True, max_length=254)
        to = fields.string_list("to", required=True)
        cc = fields.string_list("cc")
        reply_to = fields.text("reply_to", max_length=254)
        subject = fields.text("subject", default=DEFAULT_SUBJECT, max_length=200) or DEFAULT_SUBJECT
        body = fields.text("body", default="", max_length=10_000, multiline=True) or ""
        attachment_max = fields.integer(
            "attachment_max_bytes", default=10 * MIB, minimum=0, maximum=50 * MIB
        )
        link_hours = fields.integer("link_expiry_hours", default=72, minimum=1, maximum=720)
        helo_name = fields.text("helo_name", max_length=253)
        timeout = fields.integer("timeout_seconds", default=30, minimum=1, maximum=600)
        fields.check("ca_certificate", ca_certificate, ca_certificate_error)
        fields.check("from_address", from_address, address_error)
        fields.check("reply_to", reply_to, address_error)
        for name, values in (("to", to), ("cc", cc)):
            for index, value in enumerate(values):
                problem = address_error(value)
                if problem:
                    fields.error(f"{name}[{index}]", problem)
        if len(to) + len(cc) > MAX_RECIPIENTS:
            fields.error("to", f"at most {MAX_RECIPIENTS} recipients in to and cc together")
        if helo_name and hosts.host_syntax_error(helo_name):
            fields.error("helo_name", "must be a host name")
        username = fields.credential_present("username")
        fields.credential("username")
        password = fields.credential_present("password")
        fields.credential("password")
        if username != password:
            fields.error(
                "password" if username else "username",
                "username and password go together",
                section="credentials",
            )
        return {
            "host": host,
            "port": port,
            "security": security,
            "ca_certificate": ca_certificate,
            "from_address": from_address,
            "to": to,
            "cc": cc,
            "reply_to": reply_to,
            "subject": subject,
            "body": body,
            "attachment_max_bytes": attachment_max,
            "link_expiry_hours": link_hours,
            "helo_name": helo_name,
            "timeout_seconds": timeout,
        }

    def target(self) -> str:
        recipients = ", ".join(self.settings["to"] + self.settings["cc"])
        return f"smtp {self.settings['host']}:{self.settings['port']} to {recipients}"

    def _domain(self) -> str:
        return str(self.settings["from_address"]).rsplit("@", 1)[1]

    def _headed(self, subject: str, message_id: str) -> EmailMessage:
        """A message with the configured sender and recipients, `subject` and `message_id`."""
        settings = self.settings
        message = EmailMessage(policy=email.policy.SMTP)
        message["From"] = settings["from_address"]
        message["To"] = ", ".join(settings["to"])
        if settings["cc"]:
            message["Cc"] = ", ".join(settings["cc"])
        if settings.get("reply_to"):
            message["Reply-To"] = settings["reply_to"]
        message["Subject"] = subject
        message["Date"] = formatdate(usegmt=True)
        message["Message-ID"] = message_id
        return message

    def _message(
        self, delivery: Delivery, size: int, sha256: str, *, attach: bool
    ) -> tuple[EmailMessage, dict[str, str]]:
        settings = self.settings
        job_tag = hashlib.sha256(f"{delivery.job_id}/{sha256}".encode()).hexdigest()[:32]
        message = self._headed(
            # str.replace, not format(): a subject with other braces stays as written.
            settings["subject"].replace("{file_name}", delivery.file_name),
            f"<quarry.{job_tag}@{self._domain()}>",
        )
        intro = settings["body"].strip()
        details: dict[str, str] = {"message_id": message["Message-ID"]}
        if attach:
            text = f"The export {delivery.file_name} ({_human(size)}) is attached."
            message.set_content(f"{intro}\n\n{text}\n" if intro else f"{text}\n")
            maintype, _, subtype = (
                delivery.content_type
                or mimetypes.guess_type(delivery.file_name)[0]
                or "application/octet-stream"
            ).partition("/")
            message.add_attachment(
                delivery.path.read_bytes(),
                maintype=maintype,
                subtype=subtype or "octet-stream",
                filename=delivery.file_name,
            )
            details["delivered_as"] = "attachment"
        else:
            url, expires_at = signed_links.download_url(
                self.app_settings,
                delivery.job_id,
                lifetime_seconds=settings["link_expiry_hours"] * 3600,
            )
            expires = dt.datetime.fromtimestamp(expires_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            text = (
                f"The export {delivery.file_name} ({_human(size)}) is too large to attach.\n"
                f"Download it here until {expires}:\n\n{url}\n"
            )
            message.set_content(f"{intro}\n\n{text}" if intro else text)
            details["delivered_as"] = "link"
            details["link_expires_at"] = dt.datetime.fromtimestamp(expires_at, dt.UTC).isoformat()
        return message, details

    def _connect(self) -> smtplib.SMTP:
        settings = self.settings
        timeout = float(settings["timeout_seconds"])
        context = tls_context(settings.get("ca_certificate"))
        helo = settings.get("helo_name") or self._domain()
        smtp: _GuardedSMTP | _GuardedSMTPSSL
        # local_hostname is set: smtplib's default asks DNS for this machine's name.
        if settings["security"] == "tls":
            smtp = _GuardedSMTPSSL(local_hostname=helo, timeout=timeout, context=context)
        else:
            smtp = _GuardedSMTP(local_hostname=helo, timeout=timeout)
        smtp.allow_private = self.allow_private_hosts
        # smtplib takes the TLS server name from _host, which only its constructor sets;
        # constructing with the host would connect before the guard is configured.
        smtp._host = settings["host"]
        try:
            smtp.connect(settings["host"], settings["port"])
            smtp.ehlo()
            if settings["security"] == "starttls":
                if not smtp.has_extn("starttls"):
                    raise DeliveryError("the server does not offer STARTTLS")
                smtp.starttls(context=context)
                smtp.ehlo()
            if self._credentials.get("username"):
                smtp.login(self._credentials["username"], self._credentials["password"])
            return smtp
        except BaseException:
            call_quietly(smtp.close)
            raise

    def send_text(self, subject: str, text: str) -> None:
        """Mail a plain-text message (an operator alert, destinations.alerts) to the
        configured recipients, with a delivery's connection, retries and failure reasons;
        DeliveryError naming the server when it finally fails."""
        message = self._headed(subject, make_msgid("quarry", domain=self._domain()))
        message.set_content(text)
        # One Message-ID for every attempt, as a delivery's retries keep theirs.
        self.transfer(lambda: self._send(lambda smtp: message))

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        settings = self.settings
        attach = size <= settings["attachment_max_bytes"]
        details: dict[str, str] = {}

        def compose(smtp: smtplib.SMTP) -> EmailMessage:
            message, found = self._message(delivery, size, sha256, attach=attach)
            limit = int(smtp.esmtp_features.get("size", "0") or 0)
            if attach and limit and len(message.as_bytes()) > limit:
                # The server announced it would refuse a message this large.
                message, found = self._message(delivery, size, sha256, attach=False)
            details.update(found)
            return message

        recipients = self._send(compose)
        return Receipt(
            kind=self.kind,
            location="mailto:" + ",".join(recipients),
            bytes=size,
            sha256=sha256,
            details=details,
        )

    def _send(self, compose: Callable[[smtplib.SMTP], EmailMessage]) -> list[str]:
        """One SMTP session: connect, send the message `compose` makes for this connection
        (it may read the server's limits) to every recipient. Returns the recipients."""
        settings = self.settings
        recipients: list[str] = settings["to"] + settings["cc"]
        smtp = self._connect()
        try:
            refused = smtp.send_message(
                compose(smtp), from_addr=settings["from_address"], to_addrs=recipients
            )
            call_quietly(smtp.quit)
        finally:
            call_quietly(smtp.close)
        if refused:
            listed = "; ".join(
                f"{address} ({code} {reply.decode(errors='replace')})"
                for address, (code, reply) in refused.items()
            )
            raise DeliveryError(f"sent, but the server refused some recipients: {listed}")
        return recipients

    def _failure(self, exc: Exception) -> DeliveryError:
        if isinstance(exc, smtplib.SMTPAuthenticationError):
            return DeliveryError(
                f"login refused ({exc.smtp_code}): check the username and password"
            )
        if isinstance(exc, smtplib.SMTPNotSupportedError):
            return DeliveryError(f"the server does not support this: {describe_exception(exc)}")
        if isinstance(exc, smtplib.SMTPRecipientsRefused):
            listed = "; ".join(
                f"{address} ({code} {reply.decode(errors='replace')})"
                for address, (code, reply) in exc.recipients.items()
            )
            return DeliveryError(f"the server refused every recipient: {listed}")
        if isinstance(exc, smtplib.SMTPSenderRefused):
            return DeliveryError(
                f"the server refused the sender {exc.sender} ({exc.smtp_code} "
                f"{exc.smtp_error.decode(errors='replace')})"
            )
        if isinstance(exc, smtplib.SMTPServerDisconnected):
            return DeliveryError("the server closed the connection", transient=True)
        if isinstance(exc, smtplib.SMTPResponseException):
            reply = (
                exc.smtp_error.decode(errors="replace")
                if isinstance(exc.smtp_error, bytes)
                else str(exc.smtp_error)
            )
            return DeliveryError(
                f"the server answered {exc.smtp_code} {reply}", transient=400 <= exc.smtp_code < 500
            )
        return tls_failure(exc) or super()._failure(exc)


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
