"""Test infrastructure shared by the destination fixtures: TLS material, port waits and a
loopback proxy that cuts connections mid-stream."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import select
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


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
