"""TLS contexts for destinations that speak TLS themselves (FTPS, SMTP): certificates are
always verified; a private CA is trusted by giving its PEM certificate, never by turning
verification off."""

from __future__ import annotations

import ssl


def tls_context(ca_certificate: str | None) -> ssl.SSLContext:
    """A verifying client context; `ca_certificate` (PEM text) replaces the system CAs."""
    if ca_certificate:
        return ssl.create_default_context(cadata=ca_certificate)
    return ssl.create_default_context()


def ca_certificate_error(pem: str) -> str | None:
    """Why `pem` cannot serve as a trusted CA certificate, or None."""
    try:
        ssl.create_default_context(cadata=pem)
    except (ssl.SSLError, ValueError):
        return "must be a PEM certificate"
    return None
