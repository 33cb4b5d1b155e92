"""A TUF repository for tests, written with python-tuf's metadata API and served over HTTP on
loopback: root, timestamp, snapshot and targets metadata signed by keys made here, consistent
snapshots, and `trusted_root.json` as its target."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import (
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    TargetFile,
    Targets,
    Timestamp,
)

from bot.sandbox.stack import serve

ROLES = ("root", "timestamp", "snapshot", "targets")


class TufRepo:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "targets").mkdir(parents=True, exist_ok=True)
        self.signers = {role: CryptoSigner.generate_ecdsa() for role in ROLES}
        self.root = Root(expires=self._later())
        for role, signer in self.signers.items():
            self.root.add_key(signer.public_key, role)
        self.targets = Targets(expires=self._later())
        self.snapshot = Snapshot(expires=self._later())
        self.timestamp = Timestamp(expires=self._later())
        self.runner: web.AppRunner | None = None
        self.url = ""
        self._write_root()

    @staticmethod
    def _later() -> datetime:
        return datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)

    def _sign(self, signed: Root | Targets | Snapshot | Timestamp,
              signers: list[CryptoSigner]) -> bytes:
        metadata = Metadata(signed)
        for signer in signers:
            metadata.sign(signer, append=True)
        return metadata.to_bytes()

    def _write_root(self, old_root_signer: CryptoSigner | None = None) -> None:
        signers = [self.signers["root"]] + ([old_root_signer] if old_root_signer else [])
        data = self._sign(self.root, signers)
        (self.folder / f"{self.root.version}.root.json").write_bytes(data)

    @property
    def bootstrap(self) -> bytes:
        return (self.folder / "1.root.json").read_bytes()

    def publish(self, trusted_root: bytes | None, *, tamper: bool = False) -> None:
        """A new version of the `trusted_root.json` target (None: none) and the metadata
        above it; `tamper`: the served file is not the one the metadata vouch for."""
        self.targets.targets.pop("trusted_root.json", None)
        if trusted_root is not None:
            target = TargetFile.from_data("trusted_root.json", trusted_root, ["sha256"])
            self.targets.targets["trusted_root.json"] = target
            digest = hashlib.sha256(trusted_root).hexdigest()
            # same length, other bytes: only the hash tells
            served = trusted_root[:-1] + b"!" if tamper else trusted_root
            (self.folder / "targets" / f"{digest}.trusted_root.json").write_bytes(served)
        self.targets.version += 1
        (self.folder / f"{self.targets.version}.targets.json").write_bytes(
            self._sign(self.targets, [self.signers["targets"]]))
        self.snapshot.meta["targets.json"] = MetaFile(self.targets.version)
        self.snapshot.version += 1
        (self.folder / f"{self.snapshot.version}.snapshot.json").write_bytes(
            self._sign(self.snapshot, [self.signers["snapshot"]]))
        self.timestamp.snapshot_meta = MetaFile(self.snapshot.version)
        self.timestamp.version += 1
        (self.folder / "timestamp.json").write_bytes(
            self._sign(self.timestamp, [self.signers["timestamp"]]))

    def rotate_root(self) -> None:
        """Root version 2 with a new root key, signed by the old key and the new."""
        old = self.signers["root"]
        new = CryptoSigner.generate_ecdsa()
        self.root.revoke_key(old.public_key.keyid, "root")
        self.root.add_key(new.public_key, "root")
        self.root.version += 1
        self.signers["root"] = new
        self._write_root(old_root_signer=old)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_static("/", self.folder)
        self.runner, port = await serve(app)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
