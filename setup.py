"""The wheel build: everything is in pyproject.toml; this only refuses a wheel without its static assets."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithAssets(build_py):
    """Check the pinned assets (webapp/assets.toml) are in webapp/static before building; editable installs skip it."""

    def run(self):
        if not getattr(self, "editable_mode", False):
            spec = importlib.util.spec_from_file_location("tickwork_assets", HERE / "webapp" / "assets.py")
            assets = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(assets)
            assets.check_for_wheel(HERE / "webapp" / "static")
        super().run()


setup(cmdclass={"build_py": BuildPyWithAssets})
