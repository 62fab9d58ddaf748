"""Docker images with the user's libraries, built offline from this environment, and the check
that authorized modules are in the image, made when a DockerExecutor is constructed."""

from __future__ import annotations

import importlib.metadata

import pytest
from data_image import DATA_PACKAGES, data_docker, data_image_tag, docker_enabled

from executors.docker.image import image_modules, plan_image
from executors.docker.packages import (
    PackageError,
    evaluate_marker,
    parse_requirement,
    resolve,
    top_level_modules,
)
from executors.importable import NotImportable, NotInImage

ENV = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
       "os_name": "posix", "platform_machine": "x86_64", "platform_system": "Linux",
       "implementation_name": "cpython", "platform_python_implementation": "CPython",
       "implementation_version": "3.11.7", "platform_release": "6", "platform_version": "1"}


@pytest.mark.parametrize("marker, extras, holds", [
    ('python_version < "3.14"', (), True),
    ('python_version >= "3.9"', (), True),  # versions compare as versions, not strings
    ('python_version >= "3.14"', (), False),
    ('sys_platform == "win32"', (), False),
    ('sys_platform == "linux" and python_full_version >= "3.11.2"', (), True),
    ('platform_system == "Windows" or os_name == "posix"', (), True),
    ('extra == "plot"', (), False),
    ('extra == "plot"', ("plot",), True),
    ('extra == "Plot_Extra"', ("plot-extra",), True),  # extras compare by canonical name
    ('python_version < "3.14" and extra == "test"', ("plot",), False),
    ('"linux" in sys_platform', (), True),
])
def test_markers_are_evaluated_for_this_interpreter(marker, extras, holds):
    assert evaluate_marker(marker, frozenset(extras), ENV) is holds


def test_requirements_are_read_with_their_extras_and_markers():
    assert parse_requirement("numpy>=2.0.2; python_version < '3.14'") == (
        "numpy", frozenset(), "python_version < '3.14'")
    assert parse_requirement("pandas[plot, Excel] >= 2") == ("pandas", frozenset({"plot", "excel"}), None)
    assert parse_requirement("six") == ("six", frozenset(), None)


def test_the_data_packages_resolve_to_what_they_require_here_and_no_extras():
    dists = {d.name.lower(): d for d in resolve(DATA_PACKAGES)}
    assert {"numpy", "pandas", "matplotlib", "pillow", "python-dateutil"} <= set(dists)
    for name, dist in dists.items():
        assert dist.version == importlib.metadata.version(name)
        assert dist.files and not any("/tests/" in f"/{f}" for f in dist.files)
    # pandas' optional extras (pyarrow, scipy, openpyxl...) are not pulled in
    assert not {"pyarrow", "scipy", "openpyxl", "pytest"} & set(dists)
    assert {"PIL", "dateutil", "mpl_toolkits"} <= {m for d in dists.values() for m in d.modules}
    with_extra = {d.name.lower() for d in resolve(["pandas[plot]"])}
    assert "matplotlib" in with_extra and "matplotlib" not in {d.name.lower() for d in resolve(["pandas"])}


def test_a_package_that_is_not_installed_is_a_clear_error():
    with pytest.raises(PackageError, match="not installed .*pip install no-such-dist-xyz"):
        resolve(["no-such-dist-xyz"])
    with pytest.raises(TypeError):
        resolve("numpy")  # type: ignore[arg-type]


def test_top_level_modules_come_from_the_files():
    files = ["PIL/__init__.py", "PIL/_imaging.cpython-311-x86_64-linux-gnu.so", "six.py",
             "_cffi_backend.cpython-311-x86_64-linux-gnu.so", "numpy.libs/libx.so",
             "pkg-1.0.dist-info/RECORD", "__pycache__/six.cpython-311.pyc", "x.pth"]
    assert top_level_modules(files) == ["PIL", "_cffi_backend", "six"]


def test_the_image_tag_names_the_package_versions():
    plan = plan_image(DATA_PACKAGES)
    assert plan.tag == plan_image(list(reversed(DATA_PACKAGES))).tag, "order does not matter"
    assert plan.tag.startswith(plan_image().tag + "-pkgs-")
    assert f"numpy=={importlib.metadata.version('numpy')}" in plan.versions
    assert {"numpy", "pandas", "matplotlib", "PIL", "json", "io"} <= image_modules(plan)
    assert "numpy" not in image_modules(plan_image()) and "tkinter" not in image_modules(plan)


def test_authorizing_a_module_the_image_lacks_fails_at_construction_with_the_fix():
    from executors import DockerExecutor

    with pytest.raises(NotInImage) as caught:  # no engine needed: the default image is known
        DockerExecutor(authorized_imports=["numpy.*", "PIL", "math"])
    message = str(caught.value)
    assert isinstance(caught.value, NotImportable) and caught.value.missing == ("numpy", "PIL")
    assert "DockerExecutor(packages=['numpy', 'pillow'])" in message
    with pytest.raises(NotInImage, match=r"packages=\['numpy', 'pandas'\]"):
        DockerExecutor(packages=["numpy"], authorized_imports=["numpy", "pandas"])
    with pytest.raises(ValueError, match="image= or packages="):
        DockerExecutor(packages=["numpy"], image="python:3.11")
    with pytest.raises(PackageError, match="no-such-dist-xyz"):
        DockerExecutor(packages=["no-such-dist-xyz"])


@pytest.mark.docker
def test_the_data_image_runs_the_hosts_versions_and_lists_them_in_labels():
    docker_enabled()
    from executors.docker.executor import _client
    from executors.docker.image import LABEL_MODULES, LABEL_PACKAGES

    tag = data_image_tag()
    labels = _client(None).images.get(tag).labels
    assert f"pandas=={importlib.metadata.version('pandas')}" in labels[LABEL_PACKAGES].split(",")
    assert {"numpy", "pandas", "matplotlib", "PIL"} <= set(labels[LABEL_MODULES].split(","))
    with data_docker() as ex:
        result = ex.execute("import numpy, pandas, matplotlib, PIL\n"
                            "print(numpy.__version__, pandas.__version__, matplotlib.__version__)")
        assert result.error is None, result.error
        assert result.logs.split() == [importlib.metadata.version(n) for n in DATA_PACKAGES]
    # an image we built is checked from its label; another image by running the probe in it
    from executors import DockerExecutor

    DockerExecutor(image=tag, authorized_imports=["numpy", "PIL"]).close()
    with pytest.raises(NotInImage, match="Install it in that image"):
        DockerExecutor(image=plan_image().tag, authorized_imports=["numpy"])
