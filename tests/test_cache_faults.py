"""What a class meets when ContextLab's cache folder is full, read-only or holds a damaged file (issue 36):
the answer still comes, computed again rather than read; nothing half-written is left; the Class page says
in one sentence that it cannot open its store."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

import model_zoo
from model_zoo.lessons import probing
from model_zoo.lessons.senses import SenseSet, cached_sense_vectors
from tests.conftest import all_text, open_page
from tests.test_probing import sentences

BANK = SenseSet(
    "bank",
    ("the man went to the bank", "we sat on the river bank", "his money is at the bank", "the fish at the bank"),
    ("m", "r", "m", "r"),
    {"m": "money", "r": "river"},
)


def full_disk(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_cache_costs_the_work_again_not_the_answer(tiny_bert: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    model = model_zoo.load(tiny_bert)
    expected = cached_sense_vectors(model, BANK, tmp_path / "ok")
    monkeypatch.setattr(np, "savez", full_disk)
    monkeypatch.setattr(np, "save", full_disk)
    got = cached_sense_vectors(model, BANK, tmp_path / "full")
    np.testing.assert_array_equal(got.vectors, expected.vectors)
    assert list((tmp_path / "full").glob("*")) == []  # no partial file left behind
    data = sentences()
    features = probing.cached_features(model, data, probing.select_targets(data), tmp_path / "probing")
    assert features.shape[1] == 3 and list((tmp_path / "probing").glob("*")) == []


def test_two_writers_of_one_cache_file_at_once_leave_it_whole(tmp_path: Path) -> None:
    """Two workers filling the same cache file at the same moment (thirty learners pressing one button on two
    workers): each writes its own copy whole, the file in place is one of them, and no partial is left. With
    one shared partial name the second writer truncated the file the first had just moved into place, and a
    page read it empty (`make bench-load ONLY=presses`, a traceback on Using BERT's tagger)."""
    import threading

    from model_zoo import disk

    path = tmp_path / "features.npy"
    first, second = b"A" * 4096, b"B" * 4096
    halfway, second_done = threading.Event(), threading.Event()

    def slow_writer(partial: Path) -> None:
        with open(partial, "wb") as f:
            f.write(first[:2048])
            f.flush()
            halfway.set()
            assert second_done.wait(10)
            f.write(first[2048:])

    def fast_writer(partial: Path) -> None:
        assert halfway.wait(10)
        partial.write_bytes(second)

    kept: dict[str, bool] = {}
    slow = threading.Thread(target=lambda: kept.__setitem__("slow", disk.keep(path, slow_writer, ".tmp.npy")))
    slow.start()
    kept["fast"] = disk.keep(path, fast_writer, ".tmp.npy")
    second_done.set()
    slow.join(10)
    assert kept == {"slow": True, "fast": True}
    assert path.read_bytes() == first  # the last move wins, whole
    assert [f.name for f in tmp_path.iterdir()] == ["features.npy"]


def test_a_damaged_cache_file_is_computed_and_written_again(tiny_bert: Path, tmp_path: Path) -> None:
    model = model_zoo.load(tiny_bert)
    first = cached_sense_vectors(model, BANK, tmp_path)
    (kept,) = tmp_path.glob("*.npz")
    kept.write_bytes(kept.read_bytes()[:100])  # torn: a disk that filled mid-write, a copy cut short
    again = cached_sense_vectors(model, BANK, tmp_path)
    np.testing.assert_array_equal(again.vectors, first.vectors)
    with np.load(kept) as saved:  # written whole again
        np.testing.assert_array_equal(saved["vectors"], first.vectors)


def test_a_cache_folder_that_cannot_be_created_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CONTEXTLAB_CACHE", str(blocker / "cache"))
    assert model_zoo.cache_root() == blocker / "cache"  # writes under it are skipped, reads find nothing


def test_the_class_page_says_in_one_sentence_that_it_cannot_open_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CONTEXTLAB_DB", f"sqlite:///{blocker / 'class.sqlite3'}")
    at = open_page("pages/classroom.py")
    next(b for b in at.button if b.label == "Start a class").click().run()
    assert not at.exception
    assert "Class mode cannot open its store on this server" in all_text(at)
    student = open_page("pages/classroom.py", code="ABC234")
    assert not student.exception and "Class mode cannot open its store on this server" in all_text(student)


def test_a_damaged_model_file_is_one_sentence_and_the_app_stays_up(
    tiny_zoo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """minilm-l6's weights file cut short on disk: the Attention lesson (which opens on it) says so in one
    sentence naming the model; the other lessons go on."""
    from model_zoo import loading
    from tests.conftest import save_tiny_bert

    damaged = save_tiny_bert(tmp_path / "minilm-l6")
    for weights in damaged.glob("*.safetensors"):
        weights.write_bytes(weights.read_bytes()[:200])
    tiny = loading._load_card

    def load_card(card, device=None):  # noqa: ANN001, ANN202
        return loading._load_folder(damaged, device) if card.name == "minilm-l6" else tiny(card, device)

    monkeypatch.setattr(loading, "_load_card", load_card)
    at = open_page("pages/attention.py")
    assert not at.exception
    said = "\n".join(str(e.value) for e in at.info) + all_text(at)
    assert "minilm-l6 cannot be loaded: its files are damaged or unreadable" in said
    assert not open_page("pages/onehot.py").exception


def numba_module(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A fresh import of a module whose numba function, like umap-learn's, is compiled without cache=True."""
    import importlib
    import sys

    path = folder / f"{name}.py"
    if not path.exists():
        path.write_text("import numba\n\n\n@numba.njit\ndef twice(x):\n    return 2 * x\n")
        monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(name)


@pytest.fixture
def compiled_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", "")  # keep_compiled's folder, not the test run's NUMBA_CACHE_DIR
    return tmp_path / "numba"


def test_what_numba_compiles_for_umap_is_loaded_by_the_next_process(
    tmp_path: Path, compiled_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first UMAP map of every worker compiled umap-learn again (16-18 s); now the first process keeps what
    it compiles in ContextLab's cache folder and a later one loads it (a fresh import: a new dispatcher)."""
    from model_zoo import disk

    first = numba_module(tmp_path, "nb_kept", monkeypatch)
    assert disk.keep_compiled(("nb_kept",), compiled_cache) == 1
    assert disk.keep_compiled(("nb_kept",), compiled_cache) == 0  # once per function
    assert first.twice(21) == 42
    assert first.twice.stats.cache_misses and not first.twice.stats.cache_hits  # compiled, then written
    assert list(compiled_cache.rglob("*.nbc"))
    later = numba_module(tmp_path, "nb_kept", monkeypatch)
    disk.keep_compiled(("nb_kept",), compiled_cache)
    assert later.twice(21) == 42 and later.twice.stats.cache_hits and not later.twice.stats.cache_misses


def test_a_damaged_or_full_numba_cache_costs_the_compile_not_the_map(
    tmp_path: Path, compiled_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from numba.core import caching

    from model_zoo import disk

    assert numba_module(tmp_path, "nb_damaged", monkeypatch).twice(3) == 6  # a numba without keep_compiled
    module = numba_module(tmp_path, "nb_damaged", monkeypatch)
    disk.keep_compiled(("nb_damaged",), compiled_cache)
    module.twice(1)
    for file in compiled_cache.rglob("*.nb[ci]"):
        file.write_bytes(b"torn")
    again = numba_module(tmp_path, "nb_damaged", monkeypatch)
    disk.keep_compiled(("nb_damaged",), compiled_cache)
    assert again.twice(4) == 8 and again.twice.stats.cache_misses
    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full_disk)
    full = numba_module(tmp_path, "nb_full", monkeypatch)
    assert disk.keep_compiled(("nb_full",), compiled_cache) == 1
    assert full.twice(5) == 10 and not list(compiled_cache.rglob("nb_full*"))  # nothing written, no error


def test_a_umap_map_has_numba_keep_umap_learns_functions() -> None:
    """The page's own path: the first map turns numba's cache on for umap-learn's functions, in the folder set
    for it (ContextLab's cache folder; for the test run, NUMBA_CACHE_DIR in conftest), and writes them there."""
    import umap.layouts
    from numba.core import config
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    from model_zoo.lessons.projection import umap_2d

    umap_2d(np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32), seed=3)
    layouts = [f for f in vars(umap.layouts).values() if isinstance(f, Dispatcher)]
    assert layouts and not [f for f in layouts if isinstance(f._cache, NullCache)]
    assert list(Path(config.CACHE_DIR).glob("umap_*/*.nbc"))


def test_a_map_leaves_torch_on_the_threads_its_worker_was_given() -> None:
    """A worker given one thread of the cores (OMP_NUM_THREADS=1: scripts/serve.py's two workers on two cores)
    runs its models on one after its first UMAP map too; numba's OpenMP layer set the thread to every core."""
    import subprocess
    import sys

    code = (
        "import numpy as np, torch\n"
        "from model_zoo.lessons.projection import umap_2d\n"
        "umap_2d(np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32), seed=3)\n"
        "print(torch.get_num_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"} | {"OMP_NUM_THREADS": "1"}
    root = Path(__file__).resolve().parent.parent
    ran = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.split()[-1] == "1", ran.stderr[-2000:]
