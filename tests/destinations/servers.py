"""Real servers on loopback for the destination tests and the exports end-to-end tests,
started once per session on free ports and stopped at the end (terminate, wait, kill). A
server that cannot start fails the tests that need it; nothing is skipped.

- OpenSSH sshd with its own config, host key and test user;
- pyftpdlib, FTPS (TLS control and data) and plain FTP;
- moto's S3 server in its own process, with IAM authentication on;
- aiosmtpd with STARTTLS and with implicit TLS;
- a webhook receiver (http.server), and the alert channels that point at it and at aiosmtpd;
- a local Google API server (token endpoint, Drive resumable uploads, Sheets).

Also a pytest plugin: the conftests of tests/destinations and tests/exports register it with
`use_servers(config)`, so its fixtures are defined once (not once per conftest) and each
server starts once per pytest process whichever of them needs it. Shared infrastructure too:
TLS material, port waits and a loopback proxy that cuts connections mid-stream.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email.policy
import ipaddress
import json
import os
import secrets
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.factories import free_port

PLUGIN = "tests.destinations.servers"


def use_servers(config: pytest.Config) -> None:
    """Register this module as a plugin (once; later calls do nothing)."""
    if config.pluginmanager.get_plugin(PLUGIN) is None:
        config.pluginmanager.register(sys.modules[__name__], PLUGIN)


def pytest_configure(config: pytest.Config) -> None:
    # The implicit-TLS SMTP server requires AUTH without STARTTLS (its connection is TLS
    # from the first byte); aiosmtpd warns about that combination on every connection.
    config.addinivalue_line(
        "filterwarnings", "ignore:Requiring AUTH while not requiring TLS:UserWarning"
    )


def wait_for_port(
    port: int, *, timeout: float, process: subprocess.Popen[bytes] | None = None
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def make_tls_material(folder: Path) -> dict[str, str]:
    """A CA and a server certificate it signed, valid for 127.0.0.1 and localhost."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Quarry test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode()
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    (folder / "ca.pem").write_text(ca_pem)
    (folder / "cert.pem").write_text(cert_pem)
    (folder / "key.pem").write_text(key_pem)
    (folder / "server.pem").write_text(key_pem + cert_pem)
    return {
        "ca_pem": ca_pem,
        "ca_file": str(folder / "ca.pem"),
        "cert_file": str(folder / "cert.pem"),
        "key_file": str(folder / "key.pem"),
        "combined_file": str(folder / "server.pem"),
    }


def _reset(sock: socket.socket) -> None:
    """Close with RST, as a dropped network path or a crashed peer looks."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class _LoopbackListener:
    """A listener on a free loopback port that hands each connection to `_handle` on a
    background thread until closed. Subclasses set their own state before calling
    `__init__`, which starts accepting."""

    def __init__(self, *, poll_seconds: float) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(poll_seconds)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        self._thread.join(timeout=2)


class CuttingProxy(_LoopbackListener):
    """Forwards loopback TCP connections to `target_port`. The first `cuts` connections
    that carry more than `cut_after` bytes from the client are reset at that point, as a
    connection lost mid-upload; later connections pass untouched."""

    def __init__(self, target_port: int, *, cut_after: int, cuts: int = 1) -> None:
        self.target_port = target_port
        self.cut_after = cut_after
        self.cuts_left = cuts
        self.connections = 0
        self.cut_count = 0
        self._lock = threading.Lock()
        super().__init__(poll_seconds=0.2)

    def _handle(self, conn: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            cut = self.cuts_left > 0
            if cut:
                self.cuts_left -= 1
        threading.Thread(target=self._pump, args=(conn, cut), daemon=True).start()

    def _pump(self, client: socket.socket, cut: bool) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            _reset(client)
            return
        sent = 0
        was_cut = False
        sockets = [client, upstream]
        try:
            while not self._closed.is_set():
                readable, _, _ = select.select(sockets, [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if cut and sent + len(data) > self.cut_after:
                            upstream.sendall(data[: max(0, self.cut_after - sent)])
                            with self._lock:
                                self.cut_count += 1
                            was_cut = True
                            return
                        sent += len(data)
                        upstream.sendall(data)
                    else:
                        client.sendall(data)
        except OSError:
            return
        finally:
            for sock in sockets:
                if was_cut:
                    _reset(sock)
                else:
                    sock.close()


class Tripwire(_LoopbackListener):
    """A loopback listener that only counts connections: proof that a refused destination
    never connected."""

    def __init__(self) -> None:
        self.connections = 0
        super().__init__(poll_seconds=0.1)

    def _handle(self, conn: socket.socket) -> None:
        self.connections += 1
        conn.close()


def server_failed(name: str, detail: str) -> None:
    pytest.fail(f"{name} could not be started: {detail}", pytrace=False)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA and a server certificate for 127.0.0.1 and localhost (PEM paths and text)."""
    return make_tls_material(tmp_path_factory.mktemp("tls"))


# --- SSH ------------------------------------------------------------------------------------

SFTP_USER = "quarrysftp"


@dataclass
class SshServer:
    port: int
    root: Path
    uploads: Path
    readonly: Path
    host_key: str
    other_host_key: str
    ecdsa_host_key: str
    client_key: str
    password: str
    log: Path
    proxies: list[CuttingProxy] = field(default_factory=list)


def _keygen(path: Path, kind: str) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Path(f"{path}.pub").read_text().strip()


SFTP_PASSWORD_FILE = Path("/var/tmp/quarry-sftp-test-password")


def _test_user_password() -> str:
    """One random password per machine, readable by root only. Several pytest processes
    (xdist workers, two developers' runs) then agree on it instead of resetting each
    other's, and it is never a password anyone could guess."""
    try:
        fd = os.open(SFTP_PASSWORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return SFTP_PASSWORD_FILE.read_text().strip()
    password = secrets.token_urlsafe(18)
    with os.fdopen(fd, "w") as handle:
        handle.write(password)
    return password


def _ensure_user() -> str:
    """The unprivileged SFTP test user (root could write anywhere, so permission-denied
    could not be tested), created if missing; returns its password."""
    if os.geteuid() != 0:
        server_failed("sshd", "the SFTP tests create a test user and must run as root")
    password = _test_user_password()
    if subprocess.run(["id", "-u", SFTP_USER], capture_output=True).returncode != 0:
        subprocess.run(
            [
                "useradd",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                SFTP_USER,
            ],
            capture_output=True,
        )
        if subprocess.run(["id", "-u", SFTP_USER], capture_output=True).returncode != 0:
            server_failed("sshd", f"could not create the test user {SFTP_USER}")
    subprocess.run(
        ["chpasswd"], input=f"{SFTP_USER}:{password}".encode(), check=True, capture_output=True
    )
    return password


@pytest.fixture(scope="session")
def sshd() -> Iterator[SshServer]:
    if not Path("/usr/sbin/sshd").exists():
        server_failed("sshd", "/usr/sbin/sshd is missing (apt-get install openssh-server)")
    root = Path(tempfile.mkdtemp(prefix="quarry-sshd-"))
    # sshd reads authorized_keys as the test user: the directory must be traversable.
    root.chmod(0o755)
    password = _ensure_user()
    host_key = _keygen(root / "host_ed25519", "ed25519")
    other_host_key = _keygen(root / "other_ed25519", "ed25519")
    ecdsa_host_key = _keygen(root / "other_ecdsa", "ecdsa")
    _keygen(root / "client_ed25519", "ed25519")
    (root / "authorized_keys").write_text(Path(f"{root}/client_ed25519.pub").read_text())
    (root / "authorized_keys").chmod(0o644)
    uploads = root / "uploads"
    uploads.mkdir()
    shutil.chown(uploads, user=SFTP_USER)
    readonly = root / "readonly"
    readonly.mkdir(mode=0o755)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = free_port()
    config = root / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {root}/host_ed25519",
                "PidFile none",
                "UsePAM no",
                "StrictModes no",
                "PasswordAuthentication yes",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                f"AuthorizedKeysFile {root}/authorized_keys",
                f"AllowUsers {SFTP_USER}",
                "PermitRootLogin no",
                "Subsystem sftp internal-sftp",
                "ForceCommand internal-sftp",
                "MaxStartups 100",
                "MaxAuthTries 10",
                "LogLevel VERBOSE",
                "",
            ]
        )
    )
    log = root / "sshd.log"
    check = subprocess.run(
        ["/usr/sbin/sshd", "-t", "-f", str(config)], capture_output=True, text=True
    )
    if check.returncode != 0:
        server_failed("sshd", check.stderr.strip())
    with log.open("wb") as log_handle:
        proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)],
            stdout=log_handle,
            stderr=subprocess.STDOUT,
        )
    try:
        if not wait_for_port(port, timeout=10, process=proc):
            server_failed("sshd", log.read_text()[-2000:])
        yield SshServer(
            port=port,
            root=root,
            uploads=uploads,
            readonly=readonly,
            host_key=host_key,
            other_host_key=other_host_key,
            ecdsa_host_key=ecdsa_host_key,
            client_key=(root / "client_ed25519").read_text(),
            password=password,
            log=log,
        )
    finally:
        stop_process(proc)
        shutil.rmtree(root, ignore_errors=True)


# --- FTP and FTPS -----------------------------------------------------------------------------


@dataclass
class FtpServer:
    port: int
    root: Path
    tls: bool
    password: str
    reader_password: str
    faults: dict[str, int]

    def writer(self) -> dict[str, str]:
        return {"username": "writer", "password": self.password}

    def reader(self) -> dict[str, str]:
        return {"username": "reader", "password": self.reader_password}


def _start_ftp(root: Path, *, tls: dict[str, str] | None) -> Iterator[FtpServer]:
    import threading

    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler, TLS_FTPHandler
    from pyftpdlib.handlers.ftp.data import DTPHandler
    from pyftpdlib.handlers.ftps.data import TLS_DTPHandler
    from pyftpdlib.ioloop import IOLoop
    from pyftpdlib.servers import FTPServer

    # A data connection cut by the server after `cut_after` bytes, `cuts` times: the
    # upload dies mid-file as on a dropped link.
    faults = {"cuts": 0, "cut_after": 0}

    class CuttingDTP(DTPHandler):  # type: ignore[misc]
        def handle_read(self) -> None:
            super().handle_read()
            if (
                self.receive
                and not self._closed
                and faults["cuts"] > 0
                and self.tot_bytes_received > faults["cut_after"]
            ):
                faults["cuts"] -= 1
                self._resp = ("426 Connection closed; transfer aborted.", lambda *a: None)
                self.close()

        # DTPHandler binds handle_read_event to its own handle_read at class creation.
        handle_read_event = handle_read

    class CuttingTlsDTP(TLS_DTPHandler, CuttingDTP):  # type: ignore[misc]
        """TLS first in the MRO; its read path ends in CuttingDTP's handle_read."""

    password = secrets.token_urlsafe(12)
    reader_password = secrets.token_urlsafe(12)
    authorizer = DummyAuthorizer()
    authorizer.add_user("writer", password, str(root), perm="elradfmwMT")
    authorizer.add_user("reader", reader_password, str(root), perm="elr")
    handler: type[FTPHandler]
    if tls:

        class Handler(TLS_FTPHandler):  # type: ignore[misc]
            pass

        Handler.certfile = tls["combined_file"]
        Handler.tls_control_required = True
        Handler.tls_data_required = True
        Handler.dtp_handler = CuttingTlsDTP
        handler = Handler
    else:

        class PlainHandler(FTPHandler):  # type: ignore[misc]
            pass

        PlainHandler.dtp_handler = CuttingDTP
        handler = PlainHandler
    handler.authorizer = authorizer
    handler.banner = "quarry test ftpd"
    handler.auth_failed_timeout = 0.05  # the 3 s default only slows the refused-login tests
    try:
        server = FTPServer(("127.0.0.1", 0), handler, ioloop=IOLoop())
    except Exception as exc:
        server_failed("pyftpdlib", repr(exc))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            server.serve_forever(timeout=0.05, blocking=False, handle_exit=False)
        server.close_all()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = server.address[1]
    try:
        if not wait_for_port(port, timeout=5):
            server_failed("pyftpdlib", "not listening")
        yield FtpServer(
            port=port,
            root=root,
            tls=bool(tls),
            password=password,
            reader_password=reader_password,
            faults=faults,
        )
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def ftps_server(
    tmp_path_factory: pytest.TempPathFactory, tls: dict[str, str]
) -> Iterator[FtpServer]:
    yield from _start_ftp(tmp_path_factory.mktemp("ftps-root"), tls=tls)


@pytest.fixture(scope="session")
def ftp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FtpServer]:
    yield from _start_ftp(tmp_path_factory.mktemp("ftp-root"), tls=None)


# --- S3 (moto) --------------------------------------------------------------------------------

S3_BUCKET = "quarry-exports"
S3_OTHER_BUCKET = "someone-elses-bucket"


@dataclass
class S3Server:
    port: int
    writer: dict[str, str]
    admin: dict[str, str]

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin_client(self) -> object:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=self.admin["access_key_id"],
            aws_secret_access_key=self.admin["secret_access_key"],
        )


def _iam_user(iam: object, name: str, policy: dict[str, object]) -> dict[str, str]:
    import json

    iam.create_user(UserName=name)  # type: ignore[attr-defined]
    iam.put_user_policy(  # type: ignore[attr-defined]
        UserName=name, PolicyName=f"{name}-policy", PolicyDocument=json.dumps(policy)
    )
    key = iam.create_access_key(UserName=name)["AccessKey"]  # type: ignore[attr-defined]
    return {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's server in its own process (its IAM switch is process-wide), with two buckets
    and IAM authentication on: a writer that may write to one bucket only, and an admin
    the tests use to read back what arrived."""

    import boto3
    import httpx

    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "setup", "AWS_SECRET_ACCESS_KEY": "setup"}
    with log.open("wb") as log_handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log_handle,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        if not wait_for_port(port, timeout=30, process=proc):
            server_failed("moto", log.read_text()[-2000:])
        endpoint = f"http://127.0.0.1:{port}"
        setup = {
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": "setup",
            "aws_secret_access_key": "setup",
        }
        iam = boto3.client("iam", **setup)
        writer = _iam_user(
            iam,
            "quarry-writer",
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": [
                            "s3:PutObject",
                            "s3:GetObject",
                            "s3:AbortMultipartUpload",
                            "s3:ListMultipartUploadParts",
                        ],
                        "Resource": [f"arn:aws:s3:::{S3_BUCKET}/*"],
                    }
                ],
            },
        )
        admin = _iam_user(
            iam,
            "quarry-admin",
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            },
        )
        s3 = boto3.client("s3", **setup)
        s3.create_bucket(Bucket=S3_BUCKET)
        s3.create_bucket(Bucket=S3_OTHER_BUCKET)
        # From here on every request must be signed by a known key and allowed by policy.
        httpx.post(f"{endpoint}/moto-api/reset-auth", content=b"0").raise_for_status()
        yield S3Server(port=port, writer=writer, admin=admin)
    finally:
        stop_process(proc)


# --- SMTP (aiosmtpd) --------------------------------------------------------------------------

SMTP_USER = "mailer"
REFUSED_RECIPIENT = "blocked@example.com"


@dataclass
class SmtpServer:
    port: int
    password: str
    messages: list[object]
    security: str

    def credentials(self) -> dict[str, str]:
        return {"username": SMTP_USER, "password": self.password}

    def received(self, recipient: str) -> list[EmailMessage]:
        """The messages accepted for `recipient`: a test finds its own on the shared server
        by a recipient of its own."""
        return [
            cast(EmailMessage, BytesParser(policy=email.policy.default).parsebytes(raw))
            for raw in (
                envelope.original_content  # type: ignore[attr-defined]
                for envelope in list(self.messages)
                if recipient in envelope.rcpt_tos  # type: ignore[attr-defined]
            )
        ]


class _StoringHandler:
    """Keeps every accepted message; refuses one recipient as a mailbox would."""

    def __init__(self) -> None:
        self.messages: list[object] = []

    async def handle_RCPT(  # aiosmtpd's hook name
        self, server: object, session: object, envelope: object, address: str, options: list[str]
    ) -> str:
        if address == REFUSED_RECIPIENT:
            return "550 5.1.1 Mailbox unavailable"
        envelope.rcpt_tos.append(address)  # type: ignore[attr-defined]
        return "250 OK"

    async def handle_DATA(  # aiosmtpd's hook name
        self, server: object, session: object, envelope: object
    ) -> str:
        self.messages.append(envelope)
        return "250 Message accepted for delivery"


def _start_smtp(tls: dict[str, str], *, security: str) -> Iterator[SmtpServer]:
    import ssl

    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    password = secrets.token_urlsafe(12)

    def authenticator(
        server: object, session: object, envelope: object, mechanism: str, auth_data: object
    ) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and (
            auth_data.login == SMTP_USER.encode() and auth_data.password == password.encode()
        )
        # handled=False: aiosmtpd then answers 535 itself.
        return AuthResult(success=ok, handled=False)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls["cert_file"], tls["key_file"])
    handler = _StoringHandler()
    port = free_port()
    common = {
        "hostname": "127.0.0.1",
        "port": port,
        "authenticator": authenticator,
        "auth_required": True,
        "server_hostname": "mail.quarry.test",
    }
    if security == "starttls":
        controller = Controller(
            handler, tls_context=context, require_starttls=True, auth_require_tls=True, **common
        )
    else:
        # Implicit TLS: the whole connection is encrypted, so AUTH needs no STARTTLS.
        controller = Controller(handler, ssl_context=context, auth_require_tls=False, **common)
    try:
        controller.start()
    except Exception as exc:
        server_failed(f"aiosmtpd ({security})", repr(exc))
    try:
        yield SmtpServer(port=port, password=password, messages=handler.messages, security=security)
    finally:
        controller.stop()


@pytest.fixture(scope="session")
def smtp_starttls(tls: dict[str, str]) -> Iterator[SmtpServer]:
    yield from _start_smtp(tls, security="starttls")


@pytest.fixture(scope="session")
def smtp_tls(tls: dict[str, str]) -> Iterator[SmtpServer]:
    yield from _start_smtp(tls, security="tls")


# --- Webhooks and operator alerts -------------------------------------------------------------


@dataclass
class Webhook:
    """A local HTTP receiver: every POST's JSON body is kept in `posts` and answered with
    `status` (set it to make the receiver fail)."""

    url: str
    posts: list[Any]
    status: int = 200


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    received: list[Any] = []
    hook = Webhook(url="", posts=received)

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append(json.loads(body))
            self.send_response(hook.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # A path like a Slack webhook's, whose last part is its secret.
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/services/T0/B0/{secrets.token_hex(12)}"
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class AlertChannels:
    """Where operator alerts go in a test: aiosmtpd (STARTTLS, AUTH) to a recipient of this
    test's own, and a webhook receiver. `settings` are the QUARRY_ALERT_* values as
    load_settings keywords; `environment` the same as variables."""

    smtp: SmtpServer
    webhook: Webhook
    recipient: str

    @property
    def settings(self) -> dict[str, str]:
        return {
            "alert_smtp_url": (
                f"smtp://{SMTP_USER}:{self.smtp.password}@127.0.0.1:{self.smtp.port}"
            ),
            "alert_email": self.recipient,
            "alert_email_from": "quarry@alerts.example.com",
            "alert_webhook_url": self.webhook.url,
        }

    @property
    def environment(self) -> dict[str, str]:
        return {f"QUARRY_{name.upper()}": value for name, value in self.settings.items()}

    def emails(self) -> list[EmailMessage]:
        """The messages the SMTP server accepted for this test's recipient."""
        return self.smtp.received(self.recipient)


@pytest.fixture
def alert_channels(
    smtp_starttls: SmtpServer,
    webhook: Webhook,
    tls: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> AlertChannels:
    # The test CA, as an operator trusts a private one: alerts have no CA setting of their own.
    monkeypatch.setenv("SSL_CERT_FILE", tls["ca_file"])
    recipient = f"ops-{secrets.token_hex(4)}@example.com"
    return AlertChannels(smtp=smtp_starttls, webhook=webhook, recipient=recipient)


# --- Google APIs (local stand-in) -------------------------------------------------------------

WRITABLE_FOLDER = "folder-writable-0001"
READONLY_FOLDER = "folder-readonly-0001"


@dataclass
class GoogleServer:
    base_url: str
    token_uri: str
    state: object
    service_account: dict[str, str]


@pytest.fixture(scope="session")
def google_key() -> object:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def google(google_key: object) -> Iterator[GoogleServer]:
    """A fresh stand-in per test (its state is the assertion), on a free port."""
    import threading

    from cryptography.hazmat.primitives import serialization

    from tests.destinations.fake_google import FakeGoogleServer, FakeGoogleState

    email = "quarry-exports@quarry-test.iam.gserviceaccount.com"
    state = FakeGoogleState(client_email=email, public_key=google_key.public_key())  # type: ignore[attr-defined]
    state.folders = {WRITABLE_FOLDER: "writer", READONLY_FOLDER: "reader"}
    try:
        server = FakeGoogleServer(state)
    except OSError as exc:
        server_failed("fake Google API server", repr(exc))
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    pem = google_key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    account = {
        "type": "service_account",
        "project_id": "quarry-test",
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": email,
        "client_id": "1" + "".join(str(secrets.randbelow(10)) for _ in range(20)),
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    try:
        yield GoogleServer(
            base_url=server.base_url,
            token_uri=state.token_uri,
            state=state,
            service_account=account,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
