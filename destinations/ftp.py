"""FTP and FTPS delivery with ftplib.

FTPS (explicit TLS, `AUTH TLS`, then `PROT P` so the file travels encrypted too) is the
default; plain FTP sends the password in the clear and is used only when a configuration
sets `security: "none"` on the `ftp` kind. Transfers are passive, binary, to a temporary
name; the size is checked with SIZE (a server that sees the data connection close early
still answers "226 Transfer complete"), then the file is renamed into place.
"""

from __future__ import annotations

import ftplib
import posixpath
import socket
from typing import Any, ClassVar, cast

from destinations import hosts
from destinations.base import (
    BaseDestination,
    Delivery,
    DeliveryError,
    Receipt,
    call_quietly,
    describe_exception,
    temporary_name,
)
from destinations.fields import FieldReader
from destinations.tls import ca_certificate_error, tls_context, tls_failure
from quarry.settings import Settings


def _guarded_connect(
    ftp: ftplib.FTP, allow_private: bool, host: str, port: int, timeout: float
) -> str:
    """ftplib's connect with the private-host guard: the control connection goes to an
    address that passed it. Passive data connections go to the same address, because
    ftplib ignores the address in a PASV reply (trust_server_pasv_ipv4_address is off)."""
    if host:
        ftp.host = host
    if port > 0:
        ftp.port = port
    if timeout != -999:
        ftp.timeout = timeout
    # Our constructors always give a timeout; ftplib types it Optional.
    limit = cast(float, ftp.timeout)
    sock = hosts.connect(ftp.host, ftp.port, timeout=limit, allow_private=allow_private)
    ftp.sock = sock
    ftp.af = sock.family
    ftp.file = sock.makefile("r", encoding=ftp.encoding)
    ftp.welcome = ftp.getresp()
    return ftp.welcome


class _GuardedFTP(ftplib.FTP):
    allow_private = False

    def connect(
        self,
        host: str = "",
        port: int = 0,
        timeout: float = -999,
        source_address: tuple[str, int] | None = None,
    ) -> str:
        return _guarded_connect(self, self.allow_private, host, port, timeout)


class _GuardedFTPS(_GuardedFTP, ftplib.FTP_TLS):
    """_GuardedFTP's connect, FTP_TLS for the rest."""

    def ntransfercmd(
        self, cmd: str, rest: int | str | None = None
    ) -> tuple[socket.socket, int | None]:
        conn, size = ftplib.FTP.ntransfercmd(self, cmd, rest)
        if self._prot_p:  # type: ignore[attr-defined]
            # Servers such as vsftpd and FileZilla require the data connection to resume
            # the control connection's TLS session; ftplib does not offer it by itself.
            session = getattr(self.sock, "session", None)
            conn = self.context.wrap_socket(conn, server_hostname=self.host, session=session)
        return conn, size


class FtpDestination(BaseDestination):
    kind: ClassVar[str] = "ftp"
    securities: ClassVar[tuple[str, ...]] = ("tls", "none")

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        host = fields.host("host", allow_private=app_settings.allow_private_hosts)
        port = fields.integer("port", default=21, minimum=1, maximum=65535)
        folder = fields.text("folder", default=".") or "."
        security = fields.choice("security", cls.securities, default="tls")
        ca_certificate = fields.text("ca_certificate", max_length=20_000, multiline=True)
        timeout = fields.integer("timeout_seconds", default=30, minimum=1, maximum=600)
        fields.check("ca_certificate", ca_certificate, ca_certificate_error)
        fields.credential("username", required=True)
        fields.credential("password", required=True)
        return {
            "host": host,
            "port": port,
            "folder": folder,
            "security": security,
            "ca_certificate": ca_certificate,
            "timeout_seconds": timeout,
        }

    @property
    def secure(self) -> bool:
        return self.settings["security"] == "tls"

    def target(self) -> str:
        scheme = "ftps" if self.secure else "ftp"
        settings = self.settings
        return f"{scheme}://{settings['host']}:{settings['port']} folder {settings['folder']}"

    def _open(self) -> ftplib.FTP:
        settings = self.settings
        timeout = float(settings["timeout_seconds"])
        ftp: _GuardedFTP | _GuardedFTPS
        if self.secure:
            ftp = _GuardedFTPS(context=tls_context(settings.get("ca_certificate")), timeout=timeout)
        else:
            ftp = _GuardedFTP(timeout=timeout)
        ftp.allow_private = self.allow_private_hosts
        try:
            ftp.connect(settings["host"], settings["port"])
            if isinstance(ftp, ftplib.FTP_TLS):
                try:
                    ftp.auth()
                except ftplib.error_perm:
                    raise DeliveryError(
                        "the server does not offer FTPS (AUTH TLS was refused); set "
                        'security "none" on an ftp destination only if plain FTP is acceptable'
                    ) from None
            try:
                ftp.login(self._credentials["username"], self._credentials["password"])
            except ftplib.error_perm as exc:
                if str(exc).startswith("530"):
                    raise DeliveryError("login refused: check the username and password") from None
                raise
            if isinstance(ftp, ftplib.FTP_TLS):
                ftp.prot_p()
            ftp.set_pasv(True)
            ftp.voidcmd("TYPE I")
            return ftp
        except BaseException:
            call_quietly(ftp.close)
            raise

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        folder = self.settings["folder"]
        partial = _join(folder, temporary_name(delivery))
        final = _join(folder, delivery.file_name)
        ftp = self._open()
        try:
            try:
                with delivery.path.open("rb") as source:
                    ftp.storbinary(f"STOR {partial}", source, blocksize=64 * 1024)
                stored = _remote_size(ftp, partial)
                if stored is not None and stored != size:
                    raise DeliveryError(
                        f"the server stored {stored} of {size} bytes", transient=True
                    )
                _rename(ftp, partial, final)
            except Exception:
                call_quietly(lambda: ftp.delete(partial))
                raise
            call_quietly(ftp.quit)
        finally:
            call_quietly(ftp.close)
        scheme = "ftps" if self.secure else "ftp"
        path = final if final.startswith("/") else f"/{final}"
        return Receipt(
            kind=self.kind,
            location=f"{scheme}://{self.settings['host']}:{self.settings['port']}{path}",
            bytes=size,
            sha256=sha256,
        )

    def _failure(self, exc: Exception) -> DeliveryError:
        folder = self.settings["folder"]
        if isinstance(exc, ftplib.error_perm):
            text = describe_exception(exc)
            if text.startswith(("550", "553", "532")):
                return DeliveryError(f"the server refused the write to folder {folder}: {text}")
            return DeliveryError(f"the server refused: {text}")
        if isinstance(exc, ftplib.error_temp):
            return DeliveryError(
                f"temporary server error: {describe_exception(exc)}", transient=True
            )
        if isinstance(exc, ftplib.error_reply | ftplib.error_proto):
            return DeliveryError(
                f"unexpected server reply: {describe_exception(exc)}", transient=True
            )
        return tls_failure(exc) or super()._failure(exc)


class FtpsDestination(FtpDestination):
    """The `ftps` kind: FTP over explicit TLS, with no plain option."""

    kind: ClassVar[str] = "ftps"
    securities: ClassVar[tuple[str, ...]] = ("tls",)


def _join(folder: str, name: str) -> str:
    return name if folder in ("", ".") else posixpath.join(folder, name)


def _remote_size(ftp: ftplib.FTP, path: str) -> int | None:
    try:
        return ftp.size(path)
    except (ftplib.error_perm, ftplib.error_reply, ValueError):
        return None  # SIZE is an extension (RFC 3659); some servers lack it


def _rename(ftp: ftplib.FTP, partial: str, final: str) -> None:
    try:
        ftp.rename(partial, final)
    except ftplib.error_perm:
        # Some servers (Windows, some appliances) refuse to rename over an existing file:
        # this job's earlier copy is replaced.
        call_quietly(lambda: ftp.delete(final))
        ftp.rename(partial, final)
