"""The dashboard's pinned static files (htmx today): listed in ``webapp/assets.toml``, fetched by
``tickwork assets`` from the npm registry's tarballs without npm, and checked by hash wherever
they are needed: before a wheel is built, before ``tickwork serve`` starts, on every page.

This module needs only the standard library at import (httpx and the egress policy are
imported when fetching), so the wheel build (``setup.py``) loads it by path before any
dependency is installed.

Fetching goes through the egress policy (``models/core/egress.py``) like every other call
out, with one exception of its own: the registry the operator named with ``--registry`` (a
mirror on this machine or the network) is allowed for this fetch. The registry's redirects
are followed (registries send tarballs to a CDN), each to a destination the policy checks,
so a redirect to an internal address is refused rather than followed.
"""

import base64
import hashlib
import io
import ipaddress
import os
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ASSETS_FILE = Path(__file__).with_name("assets.toml")
STATIC_DIR = Path(__file__).with_name("static")
DEFAULT_REGISTRY = "https://registry.npmjs.org"
FETCH_TIMEOUT_SECONDS = 30
MAX_TARBALL_BYTES = 20 * 1024 * 1024


class AssetError(Exception):
    """An asset could not be fetched or is not the one pinned; nothing was written."""


@dataclass(frozen=True)
class Asset:
    name: str  # what people call it: "htmx"
    package: str  # the npm package: "htmx.org", or "@scope/name"
    version: str
    member: str  # the file's path inside the npm tarball
    path: str  # where it is served from, under webapp/static
    sha512: str  # of the file, as Subresource Integrity writes it: "sha512-<base64>"

    def tarball_url(self, registry: str) -> str:
        """Where every npm registry keeps a release's tarball: ``<registry>/<package>/-/<name>-<version>.tgz``."""
        return f"{registry.rstrip('/')}/{self.package}/-/{self.package.rsplit('/', 1)[-1]}-{self.version}.tgz"


def pinned(assets_file: Path | None = None) -> list[Asset]:
    """The pinned list."""
    with (assets_file or ASSETS_FILE).open("rb") as handle:
        return [Asset(**entry) for entry in tomllib.load(handle)["asset"]]


def integrity(data: bytes) -> str:
    """``data``'s sha512 as Subresource Integrity writes it."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


_checked: dict[tuple, bool] = {}


def _intact(asset: Asset, file: Path) -> bool:
    """The file is there and is the one pinned; hashed again only when its size or time changes."""
    try:
        stat = file.stat()
    except OSError:
        return False
    key = (str(file), stat.st_mtime_ns, stat.st_size, asset.sha512)
    if key not in _checked:
        _checked[key] = integrity(file.read_bytes()) == asset.sha512
    return _checked[key]


def problems(static_dir: Path | None = None, assets: list[Asset] | None = None) -> list[str]:
    """One line per pinned asset missing from ``static_dir``, or not the file pinned; empty when all is well."""
    static_dir = Path(static_dir or STATIC_DIR)
    found = []
    for asset in pinned() if assets is None else assets:
        file = static_dir / asset.path
        if not file.is_file():
            found.append(f"{asset.name} {asset.version} is missing ({file})")
        elif not _intact(asset, file):
            found.append(f"{asset.name} {asset.version} is not the pinned file ({file}: its sha512 differs)")
    return found


def check_registry(registry: str) -> str:
    """The registry URL if it is HTTPS, or plain HTTP to this machine (a local mirror, a test); else AssetError."""
    parts = urlsplit(registry)
    if parts.scheme == "https" and parts.hostname:
        return registry
    if parts.scheme == "http" and parts.hostname:
        host = parts.hostname
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if loopback:
            return registry
    raise AssetError(f"the registry {registry!r} is not an https:// URL (plain http is accepted on this machine only)")


def fetch_assets(static_dir: Path | None = None, registry: str = DEFAULT_REGISTRY, *, assets: list[Asset] | None = None,
                 force: bool = False, client=None) -> list[str]:
    """Fetch every pinned asset not already in place (all of them with ``force``); returns what was done.

    Every file is fetched and checked before any is written, so a failure writes nothing;
    each is written under a temporary name and renamed into place.
    """
    static_dir = Path(static_dir or STATIC_DIR)
    registry = check_registry(registry)
    wanted = pinned() if assets is None else assets
    todo = [asset for asset in wanted if force or not _intact(asset, static_dir / asset.path)]
    report = [f"{asset.name} {asset.version}: already in place ({static_dir / asset.path})"
              for asset in wanted if asset not in todo]
    fetched = []
    own_client = client is None
    client = client or _registry_client(registry)
    try:
        for asset in todo:
            fetched.append((asset, _fetch_one(client, asset, registry)))
    finally:
        if own_client:
            client.close()
    for asset, data in fetched:
        target = static_dir / asset.path
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        report.append(f"{asset.name} {asset.version}: fetched and checked ({target})")
    return report


def _registry_client(registry: str):
    """A client on the egress policy, with the registry allowed by name for this fetch only.

    The registry is the operator's own choice (the default or ``--registry``), and every file it
    gives is checked against its pinned sha512, so its name is trusted whatever it resolves to: a
    build machine's mirror often answers for registry.npmjs.org from a reserved range.
    """
    from models.core.egress import egress_client
    from models.core.errors import ConfigurationError

    chosen = [urlsplit(registry).hostname or ""]
    try:
        return egress_client(allow=chosen, timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=True)
    except ConfigurationError as exc:
        raise AssetError(f"the registry {registry!r} cannot be allowed: {exc}") from None


def _fetch_one(client, asset: Asset, registry: str) -> bytes:
    import httpx

    url = asset.tarball_url(registry)
    try:
        answer = client.get(url)
    except httpx.HTTPError as exc:
        raise AssetError(f"cannot reach the npm registry at {registry} ({type(exc).__name__}: {exc})") from None
    if answer.status_code != 200:
        raise AssetError(f"{url} answered {answer.status_code}: no {asset.package} {asset.version} there")
    if len(answer.content) > MAX_TARBALL_BYTES:
        raise AssetError(f"{url} is larger than {MAX_TARBALL_BYTES // (1024 * 1024)} MiB: refused")
    try:
        with tarfile.open(fileobj=io.BytesIO(answer.content), mode="r:gz") as tarball:
            member = tarball.getmember(asset.member)
            if not member.isfile():
                raise KeyError(asset.member)
            data = tarball.extractfile(member).read()
    except KeyError:
        raise AssetError(f"{url} holds no {asset.member}") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise AssetError(f"{url} is not a readable npm tarball ({exc})") from None
    if integrity(data) != asset.sha512:
        raise AssetError(f"{asset.name} {asset.version} from {url} does not match its pinned sha512: refused, "
                         "nothing written")
    return data


def check_for_wheel(static_dir: Path | None = None) -> None:
    """Refuse to build a wheel without every pinned asset (the build hook in setup.py)."""
    found = problems(static_dir)
    if found:
        raise SystemExit("tickwork: refusing to build a wheel without its static assets: " + "; ".join(found)
                         + ". Fetch them first: scripts/setup.sh does, or `pip install -e .` then `tickwork assets`.")


def init_app(app) -> None:
    """Pages learn the pinned assets (their paths and hashes) and which are missing; ``tickwork serve``
    asks the same before it starts."""
    by_name = {asset.name: asset for asset in pinned()}

    def missing() -> list[str]:
        return problems(Path(app.static_folder), list(by_name.values()))

    app.extensions.setdefault("tickwork.serve_checks", []).append(missing)

    @app.context_processor
    def _assets():
        return {"assets": by_name, "missing_assets": missing()}
