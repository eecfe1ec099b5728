"""A test certificate authority for real TLS on loopback (docs/space-host.md#write-notifications): a CA made
with `cryptography` for this test process only, a server certificate for 127.0.0.1 and localhost it signs,
and the client side trusting it.

engram reaches other hosts through its guarded aiohttp session, which verifies certificates against aiohttp's
default verified context (the system's trust store, loaded once at import). `trust_in_this_process` adds the
test CA to that context, so engram trusts it exactly as a deployment trusts a public CA: nothing in engram
is told about tests. The CA's key exists only in memory and signs only 127.0.0.1 and localhost."""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aiohttp.connector
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class LoopbackCA:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def create(cls) -> LoopbackCA:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        # A name of its own: OpenSSL finds an issuer by name, and each test adds its CA to the same store.
        ca_name = _name(f"engram test CA {secrets.token_hex(8)}")
        ca = (
            x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        cert = (
            x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        pem = serialization.Encoding.PEM
        return cls(
            ca.public_bytes(pem),
            cert.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        )

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain reads files only
            cert, key = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem.decode())

    def trust_in_this_process(self) -> None:
        """Add the CA to the verified context every aiohttp session of this process uses by default."""
        aiohttp.connector._SSL_CONTEXT_VERIFIED.load_verify_locations(cadata=self.ca_pem.decode())
