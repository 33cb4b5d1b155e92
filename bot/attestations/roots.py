"""Trusted Sigstore roots: each a `trusted_root.json` (Sigstore's format, as the TUF
repositories of Sigstore and GitHub publish it and `gh attestation trusted-root` prints it), and
which of them issued a signing certificate."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from cryptography import x509
from sigstore.errors import Error as SigstoreError
from sigstore.models import TrustedRoot
from sigstore.verify import Verifier
from sigstore_models.trustroot.v1 import TrustedRoot as TrustedRootMessage

from bot.attestations.trustfile import RootError

MAX_ROOTS = 32
MAX_ROOT_BYTES = 1024 * 1024


@dataclass
class NamedRoot:
    """One trusted root and the verifier sigstore-python builds on it (None for a root without
    a transparency log, such as GitHub's: only the timestamp path uses it)."""

    name: str
    root: TrustedRoot
    authorities: tuple[x509.Certificate, ...]
    verifier: Verifier | None = field(default=None, repr=False)

    def issued(self, certificate: x509.Certificate) -> bool:
        """Whether one of this root's certificate authorities issued `certificate`."""
        return any(certificate.issuer == authority.subject and _same_key_id(certificate,
                                                                             authority)
                   for authority in self.authorities)


def _same_key_id(certificate: x509.Certificate, authority: x509.Certificate) -> bool:
    try:
        issuer_key = certificate.extensions.get_extension_for_class(
            x509.AuthorityKeyIdentifier).value.key_identifier
        own_key = authority.extensions.get_extension_for_class(
            x509.SubjectKeyIdentifier).value.digest
    except (x509.ExtensionNotFound, ValueError):
        return True  # without both identifiers the names decide; path validation checks keys
    return issuer_key is None or issuer_key == own_key


def load_root(text: str | bytes, name: str | None = None) -> NamedRoot:
    """A trusted root from its JSON; `name` defaults to its first certificate authority's
    organization."""
    if len(text) > MAX_ROOT_BYTES:
        raise RootError(f"larger than {MAX_ROOT_BYTES // 1024} KiB")
    try:
        message = TrustedRootMessage.from_json(text)
        # `TrustedRoot.from_file` reads a path; its constructor takes the parsed message
        root = TrustedRoot(message)
        authorities = tuple(root.get_fulcio_certs())
    except (ValueError, SigstoreError) as exc:
        raise RootError(f"not a Sigstore trusted root: {_first_line(exc)}") from None
    if name is None:
        subject = message.certificate_authorities[0].subject
        name = subject.organization or subject.common_name or "unnamed"
    verifier = None
    if message.tlogs:
        try:
            verifier = Verifier(trusted_root=root)
        except SigstoreError as exc:  # pragma: no cover - checked above: it has a log
            raise RootError(_first_line(exc)) from None
    return NamedRoot(name, root, authorities, verifier)


def load_roots_text(text: str) -> list[NamedRoot]:
    """Trusted roots written one JSON document a line (`gh attestation trusted-root`'s output),
    or one JSON document; blank lines are passed over."""
    stripped = text.strip()
    if not stripped:
        raise RootError("holds no trusted root")
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):
        lines = [(number, line) for number, line in enumerate(text.splitlines(), 1)
                 if line.strip()]
    else:
        lines = [(1, json.dumps(whole))] if isinstance(whole, dict) else []
        if not lines:
            raise RootError("expected trusted roots as JSON objects, one a line")
    if len(lines) > MAX_ROOTS:
        raise RootError(f"holds {len(lines)} trusted roots; at most {MAX_ROOTS}")
    roots: list[NamedRoot] = []
    for number, line in lines:
        try:
            roots.append(load_root(line))
        except RootError as exc:
            raise RootError(f"line {number}: {exc}") from None
    names: dict[str, int] = {}
    for root in roots:  # two roots of one organization stay apart in /healthz and reasons
        names[root.name] = names.get(root.name, 0) + 1
        if names[root.name] > 1:
            root.name = f"{root.name} ({names[root.name]})"
    return roots


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
