"""DER encoding (ITU-T X.690) of the few ASN.1 shapes the timestamp authority writes.

`cryptography` writes certificates, but no RFC 3161 timestamp token: its CMS builder signs
`id-data` content only, and a timestamp token's content is a `TSTInfo`."""

from __future__ import annotations

from datetime import UTC, datetime


def _length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    body = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _length(len(content)) + content


def sequence(*items: bytes) -> bytes:
    return tlv(0x30, b"".join(items))


def set_of(*items: bytes) -> bytes:
    """A SET OF: DER orders its elements by their encodings."""
    return tlv(0x31, b"".join(sorted(items)))


def integer(value: int) -> bytes:
    size = max(1, (value.bit_length() + 8) // 8)  # room for the sign bit
    return tlv(0x02, value.to_bytes(size, "big", signed=True))


def octet_string(value: bytes) -> bytes:
    return tlv(0x04, value)


def null() -> bytes:
    return tlv(0x05, b"")


def oid(dotted: str) -> bytes:
    arcs = [int(arc) for arc in dotted.split(".")]
    body = bytearray([40 * arcs[0] + arcs[1]])
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(reversed(chunk))
    return tlv(0x06, bytes(body))


def generalized_time(moment: datetime) -> bytes:
    return tlv(0x18, moment.astimezone(UTC).strftime("%Y%m%d%H%M%SZ").encode())


def explicit(number: int, inner: bytes) -> bytes:
    """A context-specific constructed tag `[number] EXPLICIT` around one element."""
    return tlv(0xA0 | number, inner)


def implicit_set(number: int, *items: bytes) -> bytes:
    """`[number] IMPLICIT SET OF`: the elements of a SET under a context-specific tag."""
    return tlv(0xA0 | number, b"".join(sorted(items)))
