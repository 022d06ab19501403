"""Without its pinned assets the dashboard says so on every page, and ``tickwork serve`` will not start."""

import pytest


@pytest.fixture
def bare(app, tmp_path):
    """The app serving static files from an empty folder: as a checkout before ``tickwork assets``."""
    app.static_folder = str(tmp_path / "static")
    return app


def test_every_page_says_plainly_that_htmx_is_missing(bare, world, browser_for):
    ops = browser_for("ops")
    for url in ("/health", "/queue", "/outbox"):
        page = ops.get(url).get_data(as_text=True)
        assert "This installation is missing part of the dashboard" in page, url
        assert "htmx 4.0.1 is missing" in page and "tickwork assets" in page, url


@pytest.mark.only_backend("sqlite")  # refused before any database is opened
def test_serve_refuses_to_start_a_dashboard_that_cannot_work(bare):
    result = bare.test_cli_runner().invoke(args=["serve"])
    assert result.exit_code == 1
    assert "not serving a dashboard that cannot work: htmx 4.0.1 is missing" in result.output
    assert "Run `tickwork assets`" in result.output and len(result.output.strip().splitlines()) == 1


def test_with_its_assets_in_place_pages_load_htmx_with_its_pinned_hash(app, world, browser_for):
    from webapp.assets import pinned

    [htmx] = pinned()
    page = browser_for("ops").get("/health").get_data(as_text=True)
    assert "missing part of the dashboard" not in page
    assert f'src="/static/{htmx.path}" integrity="{htmx.sha512}"' in page
