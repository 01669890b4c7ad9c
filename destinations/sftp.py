"""SFTP delivery with paramiko.

The server's host key is pinned per destination (`host_key`, as `ssh-keyscan` prints it).
The key is checked right after the key exchange, before any credential or byte of the file
is sent: an unknown or changed key ends the delivery. Only the pinned key's algorithm is
offered during the handshake, so a server with several host keys presents the pinned one.

The file is written with pipelined writes under a temporary name, its size checked, then
moved into place with the posix-rename extension (which replaces an older copy atomically),
falling back to remove-and-rename on servers without it.
"""

from __future__ import annotations

import base64
import binascii
import io
import posixpath
from typing import Any, ClassVar

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

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
from quarry.settings import Settings

# Host key type (as written in a public key) -> host key algorithms that present it.
_HOST_KEY_ALGORITHMS: dict[str, list[str]] = {
    "ssh-ed25519": ["ssh-ed25519"],
    "ecdsa-sha2-nistp256": ["ecdsa-sha2-nistp256"],
    "ecdsa-sha2-nistp384": ["ecdsa-sha2-nistp384"],
    "ecdsa-sha2-nistp521": ["ecdsa-sha2-nistp521"],
    "ssh-rsa": ["rsa-sha2-512", "rsa-sha2-256"],
}


def parse_host_key(text: str) -> paramiko.PKey:
    """A public host key from `type base64 [comment]`, or a known_hosts line with the host
    name first. ValueError says what is wrong."""
    tokens = text.split()
    if (
        len(tokens) >= 2
        and tokens[0] not in _HOST_KEY_ALGORITHMS
        and tokens[1] in _HOST_KEY_ALGORITHMS
    ):
        tokens = tokens[1:]
    if len(tokens) < 2 or tokens[0] not in _HOST_KEY_ALGORITHMS:
        raise ValueError(
            "must be a public host key such as 'ssh-ed25519 AAAA...' (types: "
            + ", ".join(_HOST_KEY_ALGORITHMS)
            + ")"
        )
    try:
        blob = base64.b64decode(tokens[1], validate=True)
        key = paramiko.PKey.from_type_string(tokens[0], blob)
    except (binascii.Error, ValueError, paramiko.SSHException):
        raise ValueError("is not a valid public key of its type") from None
    if key.asbytes() != blob:
        raise ValueError("is not a valid public key of its type")
    return key


def key_fingerprint(key: paramiko.PKey) -> str:
    return key.fingerprint  # "SHA256:..." as OpenSSH prints it


def load_private_key(text: str, passphrase: str | None) -> paramiko.PKey:
    """A private key from OpenSSH or PEM text. ValueError never quotes the key."""
    data = text.encode()
    password = passphrase.encode() if passphrase else None
    loaded: object  # the loaders' key types differ; only the ones matched below are used
    try:
        try:
            loaded = serialization.load_ssh_private_key(data, password=password)
        except ValueError:
            loaded = serialization.load_pem_private_key(data, password=password)
    except TypeError:
        raise ValueError("is encrypted: set private_key_passphrase") from None
    except ValueError:
        raise ValueError(
            "cannot be read (not an OpenSSH or PEM key, or wrong passphrase)"
        ) from None
    key_class: type[paramiko.PKey]
    if isinstance(loaded, rsa.RSAPrivateKey):
        key_class = paramiko.RSAKey
    elif isinstance(loaded, ed25519.Ed25519PrivateKey):
        key_class = paramiko.Ed25519Key
    elif isinstance(loaded, ec.EllipticCurvePrivateKey):
        key_class = paramiko.ECDSAKey
    else:
        raise ValueError("is of an unsupported type (use ed25519, ECDSA or RSA)")
    try:
        return key_class.from_private_key(io.StringIO(text), password=passphrase)
    except paramiko.SSHException:
        raise ValueError("cannot be read (wrong passphrase?)") from None


class SftpDestination(BaseDestination):
    kind: ClassVar[str] = "sftp"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        host = fields.host("host", allow_private=app_settings.allow_private_hosts)
        port = fields.integer("port", default=22, minimum=1, maximum=65535)
        folder = fields.text("folder", default=".") or "."
        host_key = fields.text("host_key", required=True, max_length=4096)
        timeout = fields.integer("timeout_seconds", default=30, minimum=1, maximum=600)
        normalised_key = None
        if host_key and not fields.has_error("host_key"):
            try:
                key = parse_host_key(host_key)
                normalised_key = f"{key.get_name()} {key.get_base64()}"
            except ValueError as exc:
                fields.error("host_key", str(exc))
        fields.credential("username", required=True)
        password = fields.credential("password")
        private_key = fields.credential("private_key")
        passphrase = fields.credential("private_key_passphrase")
        if not (fields.credential_present("password") or fields.credential_present("private_key")):
            fields.error("password", "password or private_key is required", section="credentials")
        if private_key:
            try:
                load_private_key(private_key, passphrase)
            except ValueError as exc:
                fields.error("private_key", str(exc), section="credentials")
        del password
        return {
            "host": host,
            "port": port,
            "folder": folder,
            "host_key": normalised_key,
            "timeout_seconds": timeout,
        }

    def target(self) -> str:
        return f"{self.settings['host']}:{self.settings['port']} folder {self.settings['folder']}"

    def _connect(self) -> paramiko.Transport:
        """An authenticated transport, or DeliveryError. Nothing secret is sent before the
        server has shown the pinned host key."""
        settings = self.settings
        timeout = float(settings["timeout_seconds"])
        pinned = parse_host_key(settings["host_key"])
        sock = hosts.connect(
            settings["host"],
            settings["port"],
            timeout=timeout,
            allow_private=self.allow_private_hosts,
        )
        transport = paramiko.Transport(sock)
        try:
            transport.banner_timeout = timeout
            transport.handshake_timeout = timeout
            transport.auth_timeout = timeout
            transport.get_security_options().key_types = _HOST_KEY_ALGORITHMS[_key_type(pinned)]
            try:
                transport.start_client(timeout=timeout)
            except paramiko.IncompatiblePeer:
                raise DeliveryError(
                    f"the server offers no {_key_type(pinned)} host key, so it cannot be the "
                    f"pinned host (expected {key_fingerprint(pinned)}); nothing was sent"
                ) from None
            offered = transport.get_remote_server_key()
            if offered.asbytes() != pinned.asbytes():
                raise DeliveryError(
                    f"host key mismatch: the server presented {key_fingerprint(offered)}, "
                    f"the destination pins {key_fingerprint(pinned)}; nothing was sent. "
                    "If the server's key really changed, update host_key"
                )
            self._authenticate(transport)
            return transport
        except BaseException:
            transport.close()
            raise

    def _authenticate(self, transport: paramiko.Transport) -> None:
        username = self._credentials["username"]
        private_key = self._credentials.get("private_key")
        password = self._credentials.get("password")
        try:
            if private_key:
                key = load_private_key(private_key, self._credentials.get("private_key_passphrase"))
                try:
                    transport.auth_publickey(username, key)
                    return
                except paramiko.AuthenticationException:
                    if not password:
                        raise
            transport.auth_password(username, password)
        except paramiko.BadAuthenticationType as exc:
            allowed = ", ".join(exc.allowed_types) or "none"
            raise DeliveryError(
                f"the server does not accept this kind of login (it allows: {allowed})"
            ) from None
        except paramiko.AuthenticationException:
            raise DeliveryError(
                "authentication failed: check the username, password or private key"
            ) from None
        except ValueError as exc:
            raise DeliveryError(f"private_key {exc}") from None

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        folder = self.settings["folder"]
        partial = posixpath.join(folder, temporary_name(delivery))
        final = posixpath.join(folder, delivery.file_name)
        transport = self._connect()
        try:
            sftp = paramiko.SFTPClient.from_transport(transport)
            if sftp is None:
                raise DeliveryError("the server refused the SFTP subsystem", transient=True)
            sftp.get_channel().settimeout(float(self.settings["timeout_seconds"]))
            try:
                with delivery.path.open("rb") as source:
                    # putfo writes with pipelining and confirms the size with a stat.
                    sftp.putfo(source, partial, file_size=size, confirm=True)
                self._rename(sftp, partial, final)
                if sftp.stat(final).st_size != size:
                    raise DeliveryError(
                        "the file's size on the server differs after the rename", transient=True
                    )
            except Exception as exc:
                if not transport.is_active():
                    # Paramiko reports a dropped connection as assorted errors ("Socket is
                    # closed", EOFError): what matters is that the link is gone.
                    raise DeliveryError(
                        f"connection lost during the upload ({describe_exception(exc)})",
                        transient=True,
                    ) from None
                call_quietly(lambda: sftp.remove(partial))
                raise
            finally:
                call_quietly(sftp.close)
        finally:
            transport.close()
        location = f"sftp://{self.settings['host']}:{self.settings['port']}/{final.lstrip('/')}"
        if not final.startswith("/"):
            location = f"sftp://{self.settings['host']}:{self.settings['port']}/~/{final}"
        return Receipt(kind=self.kind, location=location, bytes=size, sha256=sha256)

    @staticmethod
    def _rename(sftp: paramiko.SFTPClient, partial: str, final: str) -> None:
        try:
            sftp.posix_rename(partial, final)
            return
        except OSError as exc:
            if isinstance(exc, PermissionError | FileNotFoundError):
                raise
        # Without posix-rename, plain RENAME refuses an existing target: remove the older
        # copy of this job's file first (a short window without it beats a failed retry).
        call_quietly(lambda: sftp.remove(final))
        sftp.rename(partial, final)

    def _failure(self, exc: Exception) -> DeliveryError:
        folder = self.settings["folder"]
        if isinstance(exc, PermissionError):
            return DeliveryError(f"permission denied writing to folder {folder}")
        if isinstance(exc, FileNotFoundError):
            return DeliveryError(f"folder {folder} does not exist on the server")
        if isinstance(exc, paramiko.SSHException):
            return DeliveryError(f"SSH error: {describe_exception(exc)}", transient=True)
        if isinstance(exc, OSError) and exc.errno is None and not isinstance(exc, TimeoutError):
            # SFTP status errors without an errno (SSH_FX_FAILURE and the like).
            return DeliveryError(f"the server refused the write: {describe_exception(exc)}")
        return super()._failure(exc)


def _key_type(key: paramiko.PKey) -> str:
    name = key.get_name()
    return "ssh-rsa" if name.startswith("rsa-sha2") else name
