"""App JWT verification and installation tokens."""

from __future__ import annotations

import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conveyor_emulator.errors import ApiError
from conveyor_emulator.store.state import Token
from conveyor_emulator.store.world import World

MAX_JWT_LIFETIME = 600
CLOCK_SKEW = 60


def generate_private_key() -> tuple[str, str]:
    """(private PEM, public PEM) of a fresh RSA 2048 key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def verify_jwt(token: str, public_pem: str, app_id: int) -> None:
    """Raise ApiError(401) unless `token` is a valid app JWT, checked like GitHub does."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise ApiError(401, "A JSON web token could not be decoded") from exc
    if header.get("alg") != "RS256":
        raise ApiError(401, "A JSON web token could not be decoded")
    try:
        claims = jwt.decode(token, public_pem, algorithms=["RS256"],
                            options={"verify_exp": False, "verify_iat": False,
                                     "verify_iss": False, "require": ["iat", "exp", "iss"]})
    except jwt.PyJWTError as exc:
        raise ApiError(401, "A JSON web token could not be decoded") from exc
    now = time.time()
    iss = claims.get("iss")
    if str(iss) != str(app_id):
        raise ApiError(401, "'Issuer' claim ('iss') must be an Integer")
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int | float) or not isinstance(exp, int | float):
        raise ApiError(401, "A JSON web token could not be decoded")
    if iat > now + CLOCK_SKEW:
        raise ApiError(401, "'Issued at' claim ('iat') must be an Integer representing a time "
                            "in the past.")
    if exp <= now:
        raise ApiError(401, "'Expiration time' claim ('exp') must be a numeric value "
                            "representing the future time at which the assertion expires.")
    if exp - iat > MAX_JWT_LIFETIME + CLOCK_SKEW:
        raise ApiError(401, "'Expiration time' claim ('exp') is too far in the future.")


def unverified_issuer(token: str) -> object:
    """The `iss` claim before verification (to pick the key to verify with), or None."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    return claims.get("iss") if isinstance(claims, dict) else None


def lookup_token(world: World, value: str) -> Token:
    token = world.tokens.get(value)
    if token is None:
        raise ApiError(401, "Bad credentials")
    if token.expires_at <= time.time():
        raise ApiError(401, "Bad credentials")
    return token
