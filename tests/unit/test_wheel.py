"""A wheel stands alone: it carries the dashboard's pinned assets, and is not built without them."""

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT
from webapp.assets import integrity, pinned

SOURCES = ["webapp", "models", "jobs", "migrations", "pyproject.toml", "setup.py", "README.md"]


def copy_of_the_checkout(target):
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, target / name)
    return target


@pytest.mark.slow
def test_a_wheel_built_from_a_checkout_carries_each_pinned_asset_and_none_is_built_without(tmp_path):
    tree = copy_of_the_checkout(tmp_path / "tree")
    for asset in pinned():
        assert (tree / "webapp" / "static" / asset.path).is_file(), "scripts/setup.sh runs `tickwork assets`"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
                            str(tmp_path / "dist"), str(tree)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("tickwork-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for asset in pinned():
            inside = f"webapp/static/{asset.path}"
            assert inside in names and integrity(archive.read(inside)) == asset.sha512
        assert "webapp/assets.toml" in names and "webapp/templates/base.html" in names

    for asset in pinned():
        (tree / "webapp" / "static" / asset.path).unlink()
    shutil.rmtree(tree / "build", ignore_errors=True)
    refused = subprocess.run([sys.executable, "setup.py", "--quiet", "build_py", "--build-lib", str(tmp_path / "lib")],
                             cwd=tree, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "refusing to build a wheel without its static assets: htmx" in refused.stderr
