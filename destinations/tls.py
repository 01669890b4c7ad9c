"""TLS for destinations that speak TLS themselves (FTPS, SMTP): certificates are always
verified; a private CA is trusted by giving its PEM certificate, never by turning
verification off. TLS failures become reasons that say so."""

from __future__ import annotations

import ssl

from destinations.base import DeliveryError, describe_exception


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


def tls_failure(exc: Exception) -> DeliveryError | None:
    """A TLS failure as a DeliveryError (an untrusted certificate is not transient), or None
    when `exc` is not one."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return DeliveryError(
            f"the server's TLS certificate is not trusted ({exc.verify_message}); "
            "set ca_certificate if it is issued by a private CA"
        )
    if isinstance(exc, ssl.SSLError):
        return DeliveryError(f"TLS error: {describe_exception(exc)}", transient=True)
    return None
