"""Save SVG / Save PNG of the plots the Gantt tests do not cover, in a real browser (headless
Chromium, Django's live_server; static/runs/figure_export.js): the sweep's plot, the compare page's
metric plots and a reproduction's figures (standalone Bokeh pages in same-origin frames). Each
button's download must be an SVG document or a PNG of the size the plot has on the page (times the
screen's pixel ratio for the PNG). The Gantt, the run's plots and the compare page's Gantts are in
test_gantt_browser.py."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET

import pytest

from gridweb.reproductions import execution as reproduction_execution
from gridweb.reproductions.execution import create_reproduction, execute_reproduction
from gridweb.runs import services
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Status
from gridweb.sharing import Visibility
from tests.web.test_gantt_browser import finished_run, png_size

pytestmark = pytest.mark.slow

SVG = "{http://www.w3.org/2000/svg}svg"

SPEC = {
    "name": "export",
    "platform": {"clusters": [{"name": "main", "processors": 16, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "u", "target": "main", "arrival": {"target_load": 0.8},
                              "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
                              "runtime": {"kind": "exponential", "mean": 300}, "count": 150}]},
    "run": {"seed": 5, "replications": 2},
}


def spec(name: str) -> dict:
    out = copy.deepcopy(SPEC)
    out["name"] = name
    return out


@pytest.fixture
def user(transactional_db, django_user_model):
    return django_user_model.objects.create_user("exporter", password="pw-exporter-123")


def root_size(frame, container: str | None = None) -> tuple[float, float]:
    """CSS width and height of the Bokeh root drawn in ``container`` (a selector; None: the frame's
    one root, a standalone page), measured on the page, not by the export code."""
    find = ("Bokeh.index.roots[0]" if container is None else
            f"Bokeh.index.roots.find((v) => document.querySelector({container!r}).contains(v.el))")
    return tuple(frame.evaluate(f"(() => {{ const r = {find}.el.getBoundingClientRect();"
                                " return [r.width, r.height]; })()"))


def check_exports(page, bar, name: str, size) -> None:
    """Click the bar's PNG and SVG buttons; both downloads are images of the plot's ``size``.
    ``size`` is a pair, or a callable giving it (measured once the button has drawn the plot)."""
    scale = page.evaluate("window.devicePixelRatio")
    with page.expect_download() as png_download:
        bar.locator("[data-export=png]").click()
    png = png_download.value
    if callable(size):
        size = size()
    assert png.suggested_filename == f"{name}.png"
    width, height = png_size(open(png.path(), "rb").read())
    assert abs(width - size[0] * scale) <= 2 * scale and abs(height - size[1] * scale) <= 2 * scale, \
        (name, width, height, size, scale)
    with page.expect_download() as svg_download:
        bar.locator("[data-export=svg]").click()
    svg = svg_download.value
    assert svg.suggested_filename == f"{name}.svg"
    root = ET.parse(svg.path()).getroot()
    assert root.tag == SVG, root.tag
    assert abs(float(root.get("width")) - size[0]) <= 2 and abs(float(root.get("height")) - size[1]) <= 2, \
        (name, root.get("width"), root.get("height"), size)
    assert len(list(root.iter())) > 30, name  # drawn, not an empty frame


def test_the_sweep_plot_exports_as_svg_and_png_of_its_size(live_server, builder, user, monkeypatch):
    monkeypatch.setattr(services, "_dispatch_sweep", lambda sweep_id: None)  # the test runs the points
    sweep = services.create_sweep(user, spec("export sweep"), {"workload.streams.0.arrival.target_load": [0.5, 0.9]},
                                  visibility=Visibility.PUBLIC)
    for run in sweep.runs.order_by("pk"):
        assert execute_run(run.pk) == Status.DONE
    page = builder
    page.goto(f"{live_server.url}/sweeps/{sweep.pk}/?metric=mean_wait")
    bar = page.locator("#plot-aggregate .figure-export[data-for=aggregate]")
    check_exports(page, bar, "aggregate", lambda: root_size(page, "#plot-aggregate"))
    assert page.js_errors == []


def test_the_compare_plots_export_as_svg_and_png_of_their_size(live_server, builder, user):
    runs = [finished_run(user, spec(f"export {i}")) for i in (1, 2)]
    page = builder
    page.goto(f"{live_server.url}/compare/?runs={runs[0].pk},{runs[1].pk}")
    plots = page.locator(".plot-grid .plot").evaluate_all("(plots) => plots.map((p) => p.id)")
    assert len(plots) >= 2, plots
    for plot in plots:
        name = plot.removeprefix("plot-")
        bar = page.locator(f"#{plot} .figure-export[data-for={name}]")
        check_exports(page, bar, name, lambda plot=plot: root_size(page, f"#{plot}"))
    assert page.js_errors == []


def klein_and_a_table(out, quick, log, progress=None):
    """Klein's recipe (its Gantt page and two pages of tables with plots) and a page of a table alone."""
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, DataTable, Div, TableColumn
    from bokeh.resources import INLINE

    from simengine import reproductions as recipes

    claims = recipes.module("klein").recipe(out, quick=quick, log=log, progress=progress)
    table = DataTable(source=ColumnDataSource({"a": [1, 2]}), columns=[TableColumn(field="a", title="a")])
    (out / "table-alone.html").write_text(file_html(column(Div(text="A table"), table), INLINE, "A table alone"))
    return claims


def test_each_reproduction_figure_exports_as_svg_and_png_of_its_size(live_server, builder, user, monkeypatch):
    monkeypatch.setattr(reproduction_execution.recipes, "get", lambda name: klein_and_a_table)
    rep = create_reproduction(user, "klein", quick=True, visibility=Visibility.PUBLIC, dispatch_now=False)
    assert execute_reproduction(rep.pk) == Status.DONE
    rep.refresh_from_db()
    files = [f["file"] for f in rep.figures]
    assert set(files) == {"gantt_test0.html", "table1.html", "table2.html", "table-alone.html"}
    page = builder
    page.goto(f"{live_server.url}/reproductions/{rep.pk}/")
    for file in files:
        figure = page.locator(f'.reproduction-figure[data-file="{file}"]')
        name = f"klein-{file.removesuffix('.html')}"
        bar = figure.locator(f".figure-export[data-for={name}]")
        frame = figure.locator("iframe").element_handle().content_frame()
        if file == "table-alone.html":
            # nothing to draw: once its frame has loaded, its buttons go away
            assert bar.count() == 1
            figure.scroll_into_view_if_needed()
            bar.wait_for(state="hidden")
            continue
        check_exports(page, bar, name, lambda frame=frame: root_size(frame))
    assert page.js_errors == []
