"""Figures and tables come back: matplotlib figures and PIL images as PNG attachments, pandas
and numpy values as notebook-like text, the same in every executor."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from data_image import DATA_IMPORTS, data_docker
from hypothesis import given, settings
from hypothesis import strategies as st

from executors import Limits
from executors.remote.protocol import ProtocolError
from executors.worker.display import display_text
from executors.worker.figures import max_pixels
from executors.worker.wire import PNG, attachments_to_wire, png_size

PLOT = """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [4, 1, 9])
ax.set_title('line')
"""


def _local(**kw: Any) -> Any:
    from executors import LocalExecutor

    return LocalExecutor(**kw)


def _subprocess(policy: str):
    def make(**kw: Any) -> Any:
        from executors import SubprocessExecutor

        return SubprocessExecutor(policy=policy, **kw)

    return make


KINDS = {"local": _local, "subprocess-restricted": _subprocess("restricted"),
         "subprocess-open": _subprocess("open"), "docker-open": data_docker}


@pytest.fixture(scope="module")
def shared() -> Iterator[dict[str, Any]]:
    """One executor per kind with the default settings, for the tests that need nothing else
    (workers that import pandas and matplotlib take seconds to start)."""
    made: dict[str, Any] = {}
    yield made
    for ex in made.values():
        ex.close()


def _maker(kind: str, shared: dict[str, Any]) -> Iterator[Any]:
    made: list[Any] = []

    def build(**kw: Any) -> Any:
        if not kw:
            if kind not in shared:
                shared[kind] = KINDS[kind](authorized_imports=DATA_IMPORTS, limits=Limits(timeout_s=20))
            shared[kind].reset()
            return shared[kind]
        kw.setdefault("authorized_imports", DATA_IMPORTS)
        kw.setdefault("limits", Limits(timeout_s=20))
        ex = KINDS[kind](**kw)
        made.append(ex)
        return ex

    yield build
    for ex in made:
        ex.close()


@pytest.fixture(params=list(KINDS))
def make(request: pytest.FixtureRequest, shared: dict[str, Any]) -> Iterator[Any]:
    """Every executor: LocalExecutor, SubprocessExecutor (both policies), DockerExecutor."""
    if request.param.startswith("docker"):
        request.applymarker(pytest.mark.docker)
    yield from _maker(request.param, shared)


# The restricted runtime over the wire is local's code plus the wire that subprocess-open tests.
@pytest.fixture(params=["local", "subprocess-open", "docker-open"])
def make_each_runtime(request: pytest.FixtureRequest, shared: dict[str, Any]) -> Iterator[Any]:
    """Each runtime (restricted in process, open in a worker) and each place it crosses from."""
    if request.param.startswith("docker"):
        request.applymarker(pytest.mark.docker)
    yield from _maker(request.param, shared)


def _pixels(data: bytes) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(data))


# -- figures ---------------------------------------------------------------------------------
def test_a_figure_left_open_comes_back_as_a_png_and_is_closed(make):
    ex = make()
    result = ex.execute(PLOT + "plt.show()\nprint(len(plt.get_fignums()))")
    assert result.error is None, result.error
    assert result.logs == "1\n", "show() keeps the figure and says nothing"
    [figure] = result.attachments
    assert (figure.media_type, figure.name, figure.width, figure.height) == (PNG, "figure 1", 640, 480)
    assert figure.data.startswith(b"\x89PNG") and _pixels(figure.data).size == (640, 480)
    assert figure.describe().startswith("figure 1: 640×480 PNG")
    after = ex.execute("print(plt.get_fignums())")
    assert after.logs == "[]\n" and after.attachments == ()


def test_figures_come_back_in_order_and_closed_ones_do_not(make_each_runtime):
    make = make_each_runtime
    ex = make()
    code = (PLOT + "gone = plt.figure()\nplt.close(gone)\n"
            "plt.figure(figsize=(3, 2), dpi=50)\nplt.bar(['a', 'b'], [1, 2])\nNone")
    result = ex.execute(code)
    assert result.error is None, result.error
    assert [(a.name, a.width, a.height) for a in result.attachments] == [
        ("figure 1", 640, 480), ("figure 2", 150, 100)]


def test_a_failed_step_still_returns_its_figures(make_each_runtime):
    make = make_each_runtime
    result = make().execute(PLOT + "1 / 0")
    assert result.error.type == "ZeroDivisionError" and len(result.attachments) == 1


def test_a_pil_image_value_is_an_attachment_and_reads_by_its_size(make):
    ex = make()
    result = ex.execute("from PIL import Image\nimg = Image.new('RGB', (64, 48), (200, 10, 20))\nimg")
    assert result.error is None, result.error
    assert result.output_repr == "<PIL image 64×48 RGB>"
    [image] = result.attachments
    assert (image.name, image.width, image.height) == ("image", 64, 48)
    assert _pixels(image.data).convert("RGB").getpixel((5, 5)) == (200, 10, 20)
    final = ex.execute("final_answer(img.convert('CMYK'))")
    assert final.is_final_answer and final.attachments[0].width == 64


def test_attachments_stay_within_the_cap_rendered_smaller_or_dropped_with_a_note(make_each_runtime):
    make = make_each_runtime
    ex = make(limits=Limits(timeout_s=20, max_attachment_bytes=30_000))
    noisy = ("import numpy as np\nrng = np.random.default_rng(0)\n"
             "for i in range(2):\n    plt.figure(figsize=(8, 8))\n    plt.scatter(rng.random(3000), rng.random(3000), s=1)\n")
    result = ex.execute("import matplotlib.pyplot as plt\n" + noisy + "None")
    assert result.error is None, result.error
    assert sum(a.size for a in result.attachments) <= 30_000
    first = result.attachments[0]
    assert first.width < 800, "the first figure was drawn again at a lower dpi to fit"
    assert "not returned" in result.logs and "Limits.max_attachment_bytes" in result.logs
    assert ex.execute("print(plt.get_fignums())").logs == "[]\n"


def test_max_attachment_bytes_zero_returns_nothing_and_still_closes(make_each_runtime):
    make = make_each_runtime
    ex = make(limits=Limits(timeout_s=20, max_attachment_bytes=0))
    result = ex.execute(PLOT + "from PIL import Image\nImage.new('L', (4, 4))")
    assert result.error is None and result.attachments == () and result.logs == ""
    assert ex.execute("print(plt.get_fignums())").logs == "[]\n"


def test_rendering_runs_under_the_steps_time_limit(make):
    """A tick formatter is model code run by savefig: it gets what is left of the step's time."""
    ex = make(limits=Limits(timeout_s=3))
    ex.execute("1")  # a worker is ready once its authorized libraries are imported: not the step's time
    code = ("import matplotlib.pyplot as plt\nimport matplotlib.ticker as ticker\n"
            "def slow(x, pos):\n    while True:\n        pass\n"
            "fig, ax = plt.subplots()\nax.plot([1, 2])\nax.xaxis.set_major_formatter(ticker.FuncFormatter(slow))\n"
            "print('drawn later')")
    result = ex.execute(code)
    assert result.duration_s < 3 + 3  # the step's 3 s, and time to report on a loaded machine
    assert result.attachments == () and "drawn later" in result.logs
    assert "not returned" in result.logs or (result.error is not None and result.error.type == "TimeoutError")
    again = ex.execute("print(len(plt.get_fignums()))")
    assert again.error is None and again.logs == "0\n"


def test_rendering_keeps_the_capability_guard_on():
    """In process, drawing happens on the step's thread with the audit hook still judging."""
    from executors import LocalExecutor

    code = ("import matplotlib.pyplot as plt\nimport matplotlib.ticker as ticker\nimport pandas as pd\n"
            "def peek(x, pos):\n    return str(pd.read_csv('/etc/passwd').shape)\n"
            "fig, ax = plt.subplots()\nax.plot([1, 2])\nax.xaxis.set_major_formatter(ticker.FuncFormatter(peek))")
    with LocalExecutor(authorized_imports=DATA_IMPORTS, limits=Limits(timeout_s=20)) as ex:
        result = ex.execute(code)
    assert result.attachments == ()
    assert "figure 1 not returned: rendering it failed: " in result.logs and "/etc/passwd" in result.logs


def test_the_hosts_own_figures_are_neither_returned_nor_closed():
    import matplotlib.pyplot as plt

    from executors import LocalExecutor

    mine = plt.figure()
    try:
        with LocalExecutor(authorized_imports=DATA_IMPORTS) as ex:
            result = ex.execute(PLOT)
            # the step has a pyplot of its own: the host's figure is not there to reach
            seen = ex.execute("import matplotlib.pyplot as plt\n(plt.get_fignums(), plt.gcf().number)")
        assert [a.name for a in result.attachments] == ["figure 1"]
        assert seen.output == ([], 1)
        assert plt.fignum_exists(mine.number) and plt.get_fignums() == [mine.number]
        assert plt.gcf() is mine
    finally:
        plt.close(mine)


def test_a_huge_figure_is_drawn_within_the_memory_it_may_use():
    from executors import LocalExecutor

    with LocalExecutor(authorized_imports=DATA_IMPORTS, limits=Limits(max_memory_mb=64, timeout_s=20)) as ex:
        result = ex.execute("import matplotlib.pyplot as plt\nplt.figure(figsize=(40, 40), dpi=100)\n"
                            "plt.plot([1, 2])\nNone")
        [figure] = result.attachments
        assert figure.width * figure.height <= max_pixels(64) < 4000 * 4000
        assert ex.execute("1 + 1").output == 2, "the host survived the drawing"


# -- the host checks what a worker sends -----------------------------------------------------
def _checked(attachments: list[dict], cap: int = 1_000_000) -> Any:
    from executors.remote.protocol import Result, checked_attachments

    return checked_attachments(Result(op="result", id=1, attachments=attachments), cap)


def _png(width: int, height: int, lie: bool = False) -> bytes:
    """A PNG of width × height; `lie`: a 1 × 1 PNG whose header (CRC mended) claims that size."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1, 1) if lie else (width, height)).save(buffer, format="PNG")
    data = buffer.getvalue()
    if lie:
        header = b"IHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big") + data[24:29]
        data = data[:12] + header + zlib.crc32(header).to_bytes(4, "big") + data[33:]
    return data


def test_the_host_trusts_no_attachment_field_it_can_check():
    real = SimpleNamespace(media_type=PNG, name="figure 1", width=1, height=1, data=_png(30, 20))
    lying = SimpleNamespace(media_type=PNG, name="x", width=1, height=1, data=b"not a png at all, no")
    [kept] = _checked(attachments_to_wire([real]))
    assert (kept.width, kept.height) == (30, 20), "sizes are read from the PNG, not the worker"
    # the worker's collector sends nothing else: anything else is a lie, and the worker is replaced
    with pytest.raises(ProtocolError, match="not a PNG"):
        _checked(attachments_to_wire([real, lying]))
    with pytest.raises(ProtocolError, match="max_attachment_bytes"):  # the cap holds on the host too
        _checked(attachments_to_wire([real, real]), cap=len(real.data) + 10)
    with pytest.raises(ProtocolError, match="pixels"):  # 100 bytes claiming 60,000 × 60,000
        _checked(attachments_to_wire([SimpleNamespace(media_type=PNG, name="x", width=1, height=1,
                                                      data=_png(60_000, 60_000, lie=True))]))
    with pytest.raises(ProtocolError, match="over the 20"):
        _checked(attachments_to_wire([real] * 21), cap=10**9)
    with pytest.raises(ProtocolError):
        _checked([{"media_type": "image/svg+xml", "name": "x", "data": {"$t": "bytes", "v": ""}}])
    with pytest.raises(ProtocolError):
        _checked([{"media_type": PNG, "name": "x", "data": "plain text"}])


# -- tables ----------------------------------------------------------------------------------
def test_a_dataframe_value_reads_like_a_notebook_within_the_cap(make):
    ex = make(limits=Limits(timeout_s=20, max_output_chars=3000))
    result = ex.execute("import numpy as np\nimport pandas as pd\n"
                        "df = pd.DataFrame(np.arange(500_000).reshape(10_000, 50), "
                        "columns=[f'col{i}' for i in range(50)])\ndf['name'] = 'x' * 80\ndf")
    assert result.error is None, result.error
    text = result.output_repr
    assert len(text) <= 3000
    lines = text.splitlines()
    assert lines[0] == "DataFrame: 10,000 rows × 51 columns"
    assert lines[1] == "dtypes: int64(50), str(1)" or lines[1].startswith("dtypes: int64(50), object(1)")
    assert "9999" in text and " 0 " in text.splitlines()[3] + " " and "..." in text


def test_series_and_arrays_read_like_a_notebook(make):
    ex = make()
    series = ex.execute("import pandas as pd\nimport numpy as np\npd.Series(range(100), name='n')")
    assert series.output_repr.splitlines()[0] == "Series 'n': 100 values, dtype int64"
    assert "99" in series.output_repr and len(series.output_repr.splitlines()) < 20
    small = ex.execute("np.arange(5)")
    assert small.output_repr == "array([0, 1, 2, 3, 4])", "a small array is its own repr"
    big = ex.execute("np.arange(1_000_000).reshape(1000, 1000)")
    assert big.output_repr.splitlines()[0] == "ndarray: shape 1000×1000 (1,000,000 values), dtype int64"
    assert "999999" in big.output_repr and len(big.output_repr) < 2000


def test_a_printed_big_dataframe_is_head_and_tail_within_the_cap(make_each_runtime):
    make = make_each_runtime
    ex = make(limits=Limits(timeout_s=20, max_output_chars=2000))
    result = ex.execute("import pandas as pd\ndf = pd.DataFrame({'i': range(100_000)})\n"
                        "print(df)\nwith pd.option_context('display.max_rows', None):\n    print(df)")
    assert result.error is None, result.error
    logs = result.logs
    assert len(logs) <= 2100 and logs.startswith("           i\n0          0\n")
    assert logs.rstrip().endswith("99999  99999"), "the tail of the full print is kept"
    assert "[100000 rows x 1 columns]" in logs and "characters" in logs


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 300), cols=st.integers(1, 40), limit=st.integers(100, 4000),
       width=st.integers(1, 120))
def test_table_text_always_fits_its_limit(rows: int, cols: int, limit: int, width: int):
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(np.zeros((rows, cols)), columns=[f"c{'x' * width}{i}" for i in range(cols)])
    for value in (frame, frame.iloc[:, 0], frame.to_numpy()):
        text = display_text(value, limit)
        assert text is not None and len(text) <= limit


def test_other_values_are_left_to_repr():
    assert display_text([1, 2], 1000) is None and display_text("x", 1000) is None
    assert png_size(b"GIF89a" + bytes(30)) == (None, None)
