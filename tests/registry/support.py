"""A real OCI registry for tests: Debian's `docker-registry` (the CNCF distribution registry)
on loopback, and a client that pushes multi-arch images to it over the distribution push API.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from conveyor_emulator.registry.images import OCI_INDEX, OCI_MANIFEST, Image, build_image

BINARY = "docker-registry"
MISSING = ("docker-registry is not installed (Debian package docker-registry, the CNCF "
           "distribution registry): the real-registry tests are skipped")


def registry_binary() -> str | None:
    return shutil.which(BINARY) or (f"/usr/bin/{BINARY}"
                                    if os.access(f"/usr/bin/{BINARY}", os.X_OK) else None)


def skip_or_fail(reason: str) -> None:
    """Skip visibly; in CI (CI=true) a missing part is a failure, never a silent skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the real-registry tests must run)")
    pytest.skip(reason)


def bcrypt_hash(password: str) -> str | None:
    """A bcrypt hash for htpasswd (the only scheme distribution accepts), from the bcrypt
    package when installed, else the C library's crypt(3) through the standard library."""
    try:
        import bcrypt  # type: ignore[import-not-found,unused-ignore]

        return str(bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode())
    except ImportError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    except (ImportError, AttributeError, OSError):
        return None
    return hashed if hashed and hashed.startswith("$2") else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RegistryServer:
    root: Path
    htpasswd: tuple[str, str] | None = None  # (user, password) → Basic auth required

    def __post_init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = registry_binary()
        assert binary is not None
        auth = ""
        if self.htpasswd is not None:
            hashed = bcrypt_hash(self.htpasswd[1])
            if hashed is None:
                skip_or_fail("no bcrypt implementation for the registry's htpasswd file")
            (self.root / "htpasswd").write_text(f"{self.htpasswd[0]}:{hashed}\n")
            auth = (f"auth:\n  htpasswd:\n    realm: conveyor-tests\n"
                    f"    path: {self.root / 'htpasswd'}\n")
        config = self.root / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {self.root / 'data'}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n" + auth)
        self.log = (self.root / "registry.log").open("wb")
        self.process = subprocess.Popen([binary, "serve", str(config)], stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.root / "registry.log").read_text()[-2000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("docker-registry did not start listening")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def basic(self) -> str | None:
        if self.htpasswd is None:
            return None
        pair = f"{self.htpasswd[0]}:{self.htpasswd[1]}".encode()
        return "Basic " + base64.b64encode(pair).decode()


async def push(session: aiohttp.ClientSession, server: RegistryServer, name: str, image: Image,
               tags: list[str]) -> None:
    """CI's push: every blob through an upload session, each platform manifest by digest,
    then the index under each tag (the distribution push API, as buildx does it)."""
    headers = {"Authorization": server.basic()} if server.htpasswd else {}
    base = f"{server.url}/v2/{name}"
    manifests = {d: b for d, b in image.blobs.items() if b.media_type in (OCI_MANIFEST, OCI_INDEX)}
    for digest, blob in image.blobs.items():
        if digest in manifests:
            continue
        async with session.post(f"{base}/blobs/uploads/", headers=headers) as resp:
            assert resp.status == 202, await resp.text()
            location = resp.headers["Location"]
        upload = location if "://" in location else server.url + location
        glue = "&" if "?" in upload else "?"
        async with session.put(f"{upload}{glue}digest={digest}", data=blob.data,
                               headers={**headers, "Content-Type": "application/octet-stream"}
                               ) as resp:
            assert resp.status == 201, await resp.text()
    for digest in image.platform_digests:
        await _put_manifest(session, f"{base}/manifests/{digest}", manifests[digest].data,
                            OCI_MANIFEST, headers)
    for reference in [image.digest, *tags]:
        await _put_manifest(session, f"{base}/manifests/{reference}", image.blobs[
            image.digest].data, OCI_INDEX, headers)


async def _put_manifest(session: aiohttp.ClientSession, url: str, data: bytes, media_type: str,
                        headers: dict[str, str]) -> None:
    async with session.put(url, data=data, headers={**headers, "Content-Type": media_type}
                           ) as resp:
        assert resp.status == 201, await resp.text()


def labelled_image(text: str, *, source: str, revision: str) -> Image:
    return build_image(text, labels={"org.opencontainers.image.source": source,
                                     "org.opencontainers.image.revision": revision})


HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def chart_archive(name: str, version: str, body: str = "") -> bytes:
    """A chart as `helm package` makes it: `<name>/Chart.yaml` and a template, gzipped."""
    files = {f"{name}/Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: {version}\n"
                                   "type: application\n",
             f"{name}/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                 f"  name: {name}\ndata:\n  body: {body!r}\n"}
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped, \
            tarfile.open(fileobj=zipped, mode="w") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 0
            archive.addfile(info, io.BytesIO(data))
    return raw.getvalue()


async def push_chart(session: aiohttp.ClientSession, server: RegistryServer, repository: str,
                     name: str, version: str, *, source: str | None = None, body: str = ""
                     ) -> str:
    """`helm push`: the chart's config (its Chart.yaml as JSON) and archive as blobs, then an
    OCI image manifest whose config has Helm's media type, tagged with the version; returns
    the manifest digest."""
    config = json.dumps({"apiVersion": "v2", "name": name, "version": version,
                         "type": "application"}).encode()
    archive = chart_archive(name, version, body)
    base = f"{server.url}/v2/{repository}"
    for blob in (config, archive):
        async with session.post(f"{base}/blobs/uploads/") as resp:
            assert resp.status == 202, await resp.text()
            location = resp.headers["Location"]
        upload = location if "://" in location else server.url + location
        glue = "&" if "?" in upload else "?"
        async with session.put(f"{upload}{glue}digest={sha256(blob)}", data=blob,
                               headers={"Content-Type": "application/octet-stream"}) as resp:
            assert resp.status == 201, await resp.text()
    annotations = {"org.opencontainers.image.title": name,
                   "org.opencontainers.image.version": version}
    if source is not None:
        annotations["org.opencontainers.image.source"] = source
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": sha256(config), "size": len(config)},
        "layers": [{"mediaType": HELM_CHART, "digest": sha256(archive), "size": len(archive)}],
        "annotations": annotations,
    }).encode()
    await _put_manifest(session, f"{base}/manifests/{version}", manifest, OCI_MANIFEST, {})
    return sha256(manifest)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
